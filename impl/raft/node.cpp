// The Raft node's transitions. Each public call resets the pending Ready,
// runs the rules of Figure 2 (with PreVote and CheckQuorum from §9.6 and the
// dissertation §4.2.3), and hands the Ready back. Rules that are easy to
// break carry an assert; the injected bugs (bugs.hpp) bend exactly one rule.
#include "impl/raft/node.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "impl/assert.hpp"

namespace lockstep::raft {

std::string_view message_type_name(MessageType type) {
  switch (type) {
    case MessageType::pre_vote: return "PreVote";
    case MessageType::pre_vote_response: return "PreVoteResp";
    case MessageType::vote: return "Vote";
    case MessageType::vote_response: return "VoteResp";
    case MessageType::append: return "App";
    case MessageType::append_response: return "AppResp";
    case MessageType::snapshot: return "Snap";
  }
  return "?";
}

std::string_view role_name(Role role) {
  switch (role) {
    case Role::follower: return "follower";
    case Role::pre_candidate: return "pre-candidate";
    case Role::candidate: return "candidate";
    case Role::leader: return "leader";
  }
  return "?";
}

std::string validate(const RaftConfig& c) {
  if (c.id == node_none) return "node id must be positive";
  if (c.peers.empty() || !std::is_sorted(c.peers.begin(), c.peers.end())) return "peers must be ascending and not empty";
  if (std::adjacent_find(c.peers.begin(), c.peers.end()) != c.peers.end()) return "peers must be distinct";
  if (std::find(c.peers.begin(), c.peers.end(), c.id) == c.peers.end()) return "peers must include the node itself";
  if (c.heartbeat_ms.value <= 0) return "heartbeat_ms must be positive";
  if (c.election_ms.value < 2 * c.heartbeat_ms.value) return "election_ms must be at least twice heartbeat_ms";
  if (c.inflight_max == 0 || c.entries_per_message_max == 0 || c.uncommitted_entries_max == 0)
    return "inflight_max, entries_per_message_max and uncommitted_entries_max must be positive";
  return "";
}

RaftNode::RaftNode(RaftConfig config, std::uint64_t seed, const PersistedState& persisted, TimeMs now)
    : config_(std::move(config)), prng_(seed), hard_(persisted.hard_state), snapshot_(persisted.snapshot),
      log_(persisted.entries) {
  const auto problem = validate(config_);
  LOCKSTEP_ASSERT(problem.empty());
  for (std::size_t i = 0; i < log_.size(); ++i) {
    LOCKSTEP_ASSERT(log_[i].index == snapshot_.index + 1 + i);  // the log is contiguous
    LOCKSTEP_ASSERT(log_[i].term <= hard_.term);               // no entry from a future term
  }
  LOCKSTEP_ASSERT(snapshot_.term <= hard_.term);
  // The commit index is volatile (Figure 2): a restart knows only that the
  // snapshot is committed, and learns the rest from the leader.
  commit_ = applied_ = snapshot_.index;
  last_now_ = now;
  reset_election_deadline(now);
}

Term RaftNode::term_at(Index index) const {
  if (index == snapshot_.index) return snapshot_.term;
  LOCKSTEP_ASSERT(index > snapshot_.index);
  LOCKSTEP_ASSERT(index <= last_index());
  return log_[index - snapshot_.index - 1].term;
}

const Entry& RaftNode::entry_at(Index index) const {
  LOCKSTEP_ASSERT(index > snapshot_.index);
  LOCKSTEP_ASSERT(index <= last_index());
  return log_[index - snapshot_.index - 1];
}

void RaftNode::observe_time(TimeMs now) {
  LOCKSTEP_ASSERT(now >= last_now_);  // a node's clock never goes back
  last_now_ = now;
}

RaftNode::Progress& RaftNode::progress(NodeId peer) {
  for (auto& [id, p] : progress_) {
    if (id == peer) return p;
  }
  LOCKSTEP_ASSERT(false && "progress of a peer that is not a member");
  return progress_.front().second;
}

// CheckQuorum's lease (dissertation §4.2.3): a node that heard from a leader
// within the minimum election timeout ignores vote requests, so a node that
// cannot hear the leader cannot depose it.
bool RaftNode::in_lease(TimeMs now) const {
  if (!config_.check_quorum) return false;
  if (role_ == Role::leader) return true;
  return leader_ != node_none && leader_heard_ && now - leader_heard_at_ < config_.election_ms;
}

// §5.4.1: the candidate's log is at least as up to date as ours.
bool RaftNode::log_up_to_date(Index index, Term term) const {
  if (config_.bug == RaftBug::stale_log_vote) return true;
  if (term != last_term()) return term > last_term();
  return index >= last_index();
}

void RaftNode::reset_election_deadline(TimeMs now) {
  const auto spread = static_cast<std::uint64_t>(config_.election_ms.value);
  election_deadline_ = now + DurationMs{config_.election_ms.value + static_cast<std::int64_t>(prng_.next() % spread)};
}

void RaftNode::set_hard_state(Term term, NodeId vote) {
  LOCKSTEP_ASSERT(term >= hard_.term);                                     // terms never go back
  LOCKSTEP_ASSERT(term > hard_.term || hard_.vote == node_none || hard_.vote == vote ||
                  config_.bug == RaftBug::double_vote);                     // one vote per term
  if (hard_ == HardState{term, vote}) return;
  hard_ = {term, vote};
  ready_.hard_state = hard_;
  if (config_.bug == RaftBug::forget_vote) ready_.hard_state->vote = node_none;
}

void RaftNode::become_follower(Term term, NodeId leader, TimeMs now) {
  if (term > hard_.term) set_hard_state(term, node_none);
  role_ = Role::follower;
  leader_ = leader;
  leader_heard_ = false;
  progress_.clear();
  reset_election_deadline(now);
}

void RaftNode::start_election(TimeMs now) {
  if (config_.pre_vote) {
    become_pre_candidate(now);
  } else {
    become_candidate(now);
  }
}

// What a pre-vote round and a vote round both start with: no leader known,
// no replication state, our own vote only, and a fresh election deadline.
void RaftNode::start_vote_round(TimeMs now) {
  leader_ = node_none;
  leader_heard_ = false;
  progress_.clear();
  votes_granted_ = {config_.id};
  votes_refused_.clear();
  reset_election_deadline(now);
}

// §9.6: ask whether we could win term+1 before raising our term, so that a
// node that cannot win (partitioned, or behind) never disrupts the others.
void RaftNode::become_pre_candidate(TimeMs now) {
  role_ = Role::pre_candidate;
  start_vote_round(now);
  if (votes_granted_.size() >= quorum()) {
    become_candidate(now);
    return;
  }
  broadcast_votes(MessageType::pre_vote, hard_.term + 1);
}

void RaftNode::become_candidate(TimeMs now) {
  role_ = Role::candidate;
  set_hard_state(hard_.term + 1, config_.id);
  start_vote_round(now);
  if (votes_granted_.size() >= quorum()) {
    become_leader(now);
    return;
  }
  broadcast_votes(MessageType::vote, hard_.term);
}

void RaftNode::broadcast_votes(MessageType type, Term term) {
  for (const auto peer : config_.peers) {
    if (peer == config_.id) continue;
    Message m;
    m.type = type;
    m.to = peer;
    m.term = term;
    m.last_log_index = last_index();
    m.last_log_term = last_term();
    send(std::move(m));
  }
}

void RaftNode::become_leader(TimeMs now) {
  LOCKSTEP_ASSERT(role_ == Role::candidate);
  role_ = Role::leader;
  leader_ = config_.id;
  progress_.clear();
  for (const auto peer : config_.peers) {
    if (peer == config_.id) continue;
    Progress p;
    p.next = last_index() + 1;
    progress_.emplace_back(peer, p);
  }
  quorum_check_deadline_ = now + config_.election_ms;
  heartbeat_deadline_ = now + config_.heartbeat_ms;
  // §5.4.2 and §8: a leader commits entries of earlier terms only through an
  // entry of its own term, so it appends one at once.
  append_local(Entry{hard_.term, 0, EntryKind::noop, {}});
  for (auto& [peer, p] : progress_) send_append(peer);
  maybe_commit();
}

void RaftNode::send(Message message) {
  message.from = config_.id;
  LOCKSTEP_ASSERT(message.to != config_.id);
  ready_.messages.push_back(std::move(message));
}

void RaftNode::reply(const Message& to, MessageType type, bool granted) {
  Message m;
  m.type = type;
  m.to = to.from;
  m.term = hard_.term;
  m.granted = granted;
  send(std::move(m));
}

void RaftNode::append_local(Entry entry) {
  entry.index = last_index() + 1;
  LOCKSTEP_ASSERT(entry.term == hard_.term || role_ != Role::leader);
  if (!ready_.log_from || *ready_.log_from > entry.index) ready_.log_from = entry.index;
  log_.push_back(std::move(entry));
}

void RaftNode::truncate_from(Index index) {
  LOCKSTEP_ASSERT(index > commit_);  // committed entries are never overwritten (§5.3)
  LOCKSTEP_ASSERT(index > snapshot_.index);
  LOCKSTEP_ASSERT(index <= last_index());
  log_.resize(index - snapshot_.index - 1);
  if (!ready_.log_from || *ready_.log_from > index) ready_.log_from = index;
}

Ready RaftNode::step(const Message& m, TimeMs now) {
  observe_time(now);
  LOCKSTEP_ASSERT(m.to == config_.id);
  LOCKSTEP_ASSERT(m.from != config_.id);
  const bool is_vote_request = m.type == MessageType::vote || m.type == MessageType::pre_vote;
  if (m.term > hard_.term) {
    if (is_vote_request && in_lease(now)) return take_ready();
    const bool keeps_term = m.type == MessageType::pre_vote ||
                            (m.type == MessageType::pre_vote_response && m.granted);
    if (!keeps_term) {
      const bool from_leader = m.type == MessageType::append || m.type == MessageType::snapshot;
      become_follower(m.term, from_leader ? m.from : node_none, now);
    }
  } else if (m.term < hard_.term) {
    // A stale leader learns the newer term from the refusal and steps down;
    // a pre-candidate behind us learns it too. Other stale messages are dropped.
    if (m.type == MessageType::append || m.type == MessageType::snapshot) {
      reply(m, MessageType::append_response, false);
    } else if (m.type == MessageType::pre_vote) {
      reply(m, MessageType::pre_vote_response, false);
    }
    return take_ready();
  }
  switch (m.type) {
    case MessageType::pre_vote:
    case MessageType::vote:
      handle_vote_request(m, now);
      break;
    case MessageType::pre_vote_response:
    case MessageType::vote_response:
      count_vote(m, now);
      break;
    case MessageType::append:
      if (role_ != Role::follower) become_follower(hard_.term, m.from, now);
      handle_append(m, now);
      break;
    case MessageType::append_response:
      if (role_ == Role::leader) handle_append_response(m);
      break;
    case MessageType::snapshot:
      if (role_ != Role::follower) become_follower(hard_.term, m.from, now);
      handle_snapshot(m, now);
      break;
  }
  return take_ready();
}

void RaftNode::handle_vote_request(const Message& m, TimeMs now) {
  const bool pre = m.type == MessageType::pre_vote;
  bool can_vote = hard_.vote == m.from || (hard_.vote == node_none && leader_ == node_none) ||
                  (pre && m.term > hard_.term);
  if (config_.bug == RaftBug::double_vote && !pre && leader_ == node_none) can_vote = true;
  const bool granted = can_vote && log_up_to_date(m.last_log_index, m.last_log_term);
  Message r;
  r.type = pre ? MessageType::pre_vote_response : MessageType::vote_response;
  r.to = m.from;
  r.granted = granted;
  // A granted pre-vote answers in the term asked about; a refusal tells ours.
  r.term = pre && granted ? m.term : hard_.term;
  if (granted && !pre) {
    set_hard_state(hard_.term, m.from);
    reset_election_deadline(now);
  }
  send(std::move(r));
}

void RaftNode::count_vote(const Message& m, TimeMs now) {
  const bool pre = m.type == MessageType::pre_vote_response;
  if (pre && role_ != Role::pre_candidate) return;
  if (!pre && role_ != Role::candidate) return;
  // A granted pre-vote must be for the term this round asks about.
  if (pre && m.granted && m.term != hard_.term + 1) return;
  auto& tally = m.granted ? votes_granted_ : votes_refused_;
  const bool recount = config_.bug == RaftBug::count_replayed_votes && m.granted;
  if (!recount && std::find(votes_granted_.begin(), votes_granted_.end(), m.from) != votes_granted_.end()) return;
  if (std::find(votes_refused_.begin(), votes_refused_.end(), m.from) != votes_refused_.end()) return;
  tally.push_back(m.from);
  if (votes_granted_.size() >= quorum()) {
    if (pre) {
      become_candidate(now);
    } else {
      become_leader(now);
    }
  } else if (votes_refused_.size() >= quorum()) {
    become_follower(hard_.term, node_none, now);
  }
}

void RaftNode::handle_append(const Message& m, TimeMs now) {
  LOCKSTEP_ASSERT(role_ == Role::follower);
  leader_ = m.from;
  leader_heard_ = true;
  leader_heard_at_ = now;
  reset_election_deadline(now);
  Message r;
  r.type = MessageType::append_response;
  r.to = m.from;
  r.term = hard_.term;
  if (m.prev_log_index < commit_) {
    // Everything through our commit index matches any leader's log (§5.4).
    r.granted = true;
    r.match_index = commit_;
    send(std::move(r));
    return;
  }
  const bool prev_matches = m.prev_log_index <= last_index() && (term_at(m.prev_log_index) == m.prev_log_term ||
                                                                 config_.bug == RaftBug::skip_prev_check);
  if (!prev_matches) {
    r.granted = false;
    r.reject_index = m.prev_log_index;
    if (m.prev_log_index > last_index()) {
      r.hint_index = last_index() + 1;
    } else {
      // Skip every entry of the conflicting term at once (§5.3, end).
      const Term conflict = term_at(m.prev_log_index);
      Index first = m.prev_log_index;
      while (first > commit_ + 1 && first > snapshot_.index + 1 && term_at(first - 1) == conflict) --first;
      r.hint_index = std::max(first, commit_ + 1);
    }
    send(std::move(r));
    return;
  }
  for (const auto& entry : m.entries) {
    if (entry.index <= last_index()) {
      if (term_at(entry.index) == entry.term) continue;
      truncate_from(entry.index);
    }
    LOCKSTEP_ASSERT(entry.index == last_index() + 1);
    log_.push_back(entry);
    if (!ready_.log_from || *ready_.log_from > entry.index) ready_.log_from = entry.index;
  }
  const Index last_new = m.prev_log_index + m.entries.size();
  // Entries past last_new were not checked against the leader's log: they
  // may be a deposed leader's, so the commit index must not reach them.
  const Index verified = config_.bug == RaftBug::commit_unverified ? last_index() : last_new;
  const Index commit = std::min(m.commit, verified);
  if (commit > commit_) advance_commit(commit);
  if (config_.bug == RaftBug::commit_regress && commit < commit_) commit_ = commit;
  r.granted = true;
  r.match_index = last_new;
  send(std::move(r));
}

void RaftNode::handle_append_response(const Message& m) {
  auto& p = progress(m.from);
  p.recent_active = true;
  if (m.granted) {
    if (m.match_index > p.match) p.match = m.match_index;
    p.next = std::max(p.next, p.match + 1);
    std::erase_if(p.inflight, [&](Index sent) { return sent <= p.match; });
    p.probing = false;
    if (p.match >= snapshot_.index) p.snapshot_pending = false;
    maybe_commit();
    if (p.next <= last_index()) send_append(m.from);
    return;
  }
  if (m.reject_index < p.match) return;  // a stale refusal: that index matched since
  LOCKSTEP_ASSERT(m.hint_index <= m.reject_index + 1);
  p.next = std::max(p.match + 1, std::min(m.hint_index, m.reject_index));
  p.inflight.clear();
  p.probing = true;
  send_append(m.from);
}

void RaftNode::handle_snapshot(const Message& m, TimeMs now) {
  LOCKSTEP_ASSERT(role_ == Role::follower);
  leader_ = m.from;
  leader_heard_ = true;
  leader_heard_at_ = now;
  reset_election_deadline(now);
  const Snapshot& s = m.snapshot;
  Message r;
  r.type = MessageType::append_response;
  r.to = m.from;
  r.term = hard_.term;
  r.granted = true;
  if (s.index <= commit_) {
    r.match_index = commit_;
  } else if (s.index <= last_index() && term_at(s.index) == s.term) {
    // We hold the snapshot's last entry: our log through it matches (§7).
    advance_commit(s.index);
    r.match_index = s.index;
  } else {
    snapshot_ = s;
    log_.clear();
    commit_ = applied_ = s.index;
    ready_.snapshot = s;
    ready_.restore_snapshot = true;
    ready_.log_from = s.index + 1;
    r.match_index = s.index;
  }
  send(std::move(r));
}

void RaftNode::send_append(NodeId peer) {
  auto& p = progress(peer);
  if (p.snapshot_pending) return;
  if (p.next <= snapshot_.index) {
    // The entries the peer needs are compacted away: send the snapshot (§7).
    Message m;
    m.type = MessageType::snapshot;
    m.to = peer;
    m.term = hard_.term;
    m.snapshot = snapshot_;
    p.snapshot_pending = true;
    send(std::move(m));
    return;
  }
  const std::size_t window = p.probing ? 1 : config_.inflight_max;
  const bool has_entries = p.next <= last_index();
  if (has_entries && p.inflight.size() >= window) return;
  Message m;
  m.type = MessageType::append;
  m.to = peer;
  m.term = hard_.term;
  m.prev_log_index = p.next - 1;
  m.prev_log_term = term_at(m.prev_log_index);
  m.commit = commit_;
  const Index last = std::min(last_index(), p.next + config_.entries_per_message_max - 1);
  for (Index i = p.next; i <= last && has_entries; ++i) m.entries.push_back(entry_at(i));
  if (has_entries) {
    p.inflight.push_back(last);
    if (!p.probing) p.next = last + 1;  // pipeline: assume it arrives
  }
  send(std::move(m));
}

// Every heartbeat the leader assumes unacknowledged appends were lost: a
// pipelining peer falls back to probing from the last index known to match,
// a probing peer gets its probe again. The append also carries the commit
// index and keeps followers from campaigning.
void RaftNode::heartbeat() {
  for (auto& [peer, p] : progress_) {
    p.inflight.clear();
    p.snapshot_pending = false;
    if (!p.probing && p.next > p.match + 1) {
      p.next = p.match + 1;
      p.probing = true;
    }
    send_append(peer);
  }
}

// §5.3 and §5.4.2: the highest index held by a quorum commits, if it is of
// the current term; earlier terms' entries commit with it.
void RaftNode::maybe_commit() {
  LOCKSTEP_ASSERT(role_ == Role::leader);
  std::vector<Index> matches{last_index()};
  for (const auto& [peer, p] : progress_) matches.push_back(p.match);
  std::sort(matches.begin(), matches.end(), std::greater<>());
  const Index candidate = matches[quorum() - 1];
  if (candidate <= commit_) return;
  if (term_at(candidate) != hard_.term && config_.bug != RaftBug::commit_previous_term) return;
  advance_commit(candidate);
}

void RaftNode::advance_commit(Index index) {
  LOCKSTEP_ASSERT(index > commit_);  // the commit index never goes back
  LOCKSTEP_ASSERT(index <= last_index());
  commit_ = index;
}

void RaftNode::collect_committed() {
  Index until = commit_;
  if (config_.bug == RaftBug::apply_before_commit && role_ == Role::follower) until = std::max(until, last_index());
  for (Index i = applied_ + 1; i <= until && i <= last_index(); ++i) ready_.committed.push_back(entry_at(i));
  applied_ = std::max(applied_, until);
}

Ready RaftNode::take_ready() {
  if (ready_.log_from) {
    for (Index i = std::max(*ready_.log_from, first_index()); i <= last_index(); ++i) ready_.entries.push_back(entry_at(i));
  }
  collect_committed();
  Ready out = std::move(ready_);
  ready_ = Ready{};
  return out;
}

Ready RaftNode::tick(TimeMs now) {
  observe_time(now);
  if (role_ == Role::leader) {
    if (config_.check_quorum && now >= quorum_check_deadline_) {
      std::size_t active = 1;
      for (auto& [peer, p] : progress_) {
        if (p.recent_active) ++active;
        p.recent_active = false;
      }
      quorum_check_deadline_ = now + config_.election_ms;
      if (active < quorum()) {
        // CheckQuorum: a leader that cannot hear a quorum stops serving.
        become_follower(hard_.term, node_none, now);
        return take_ready();
      }
    }
    if (now >= heartbeat_deadline_) {
      heartbeat_deadline_ = now + config_.heartbeat_ms;
      heartbeat();
    }
  } else if (now >= election_deadline_) {
    start_election(now);
  }
  return take_ready();
}

Ready RaftNode::campaign(TimeMs now) {
  observe_time(now);
  if (role_ != Role::leader) start_election(now);
  return take_ready();
}

ProposeResult RaftNode::propose(std::string data, TimeMs now) {
  observe_time(now);
  ProposeResult result;
  if (role_ != Role::leader) {
    result.kind = ProposeResult::Kind::not_leader;
    result.leader_hint = leader_;
    return result;
  }
  if (last_index() - commit_ >= config_.uncommitted_entries_max) {
    result.kind = ProposeResult::Kind::too_many_uncommitted;
    result.leader_hint = leader_;
    return result;
  }
  append_local(Entry{hard_.term, 0, EntryKind::command, std::move(data)});
  result.kind = ProposeResult::Kind::accepted;
  result.index = last_index();
  result.term = hard_.term;
  result.leader_hint = leader_;
  for (auto& [peer, p] : progress_) send_append(peer);
  maybe_commit();
  result.ready = take_ready();
  return result;
}

Ready RaftNode::compact(Index index, std::string data) {
  LOCKSTEP_ASSERT(index <= applied_);
  LOCKSTEP_ASSERT(index <= commit_);
  if (index <= snapshot_.index) return take_ready();
  const Term term = term_at(index);
  log_.erase(log_.begin(), log_.begin() + static_cast<std::ptrdiff_t>(index - snapshot_.index));
  snapshot_ = Snapshot{index, term, std::move(data)};
  ready_.snapshot = snapshot_;
  return take_ready();
}

}  // namespace lockstep::raft
