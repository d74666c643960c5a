#include "sim/cluster/checker.hpp"

#include <charconv>

#include <fmt/format.h>

namespace lockstep::sim {

namespace {

const cluster::Session* command_session(const cluster::Command& command) {
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) return &a->session;
  if (const auto* r = std::get_if<cluster::Release>(&command)) return &r->session;
  return nullptr;
}

// 64-bit FNV-1a over numbers (8 bytes each) and length-prefixed texts.
struct Digest {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  void byte(unsigned char b) {
    hash ^= b;
    hash *= 0x100000001b3ULL;
  }
  void number(std::uint64_t value) {
    for (int shift = 0; shift < 64; shift += 8) byte(static_cast<unsigned char>(value >> shift));
  }
  void text(std::string_view value) {
    number(value.size());
    for (const char c : value) byte(static_cast<unsigned char>(c));
  }
};

std::string show(const Outputs& outputs) {
  if (outputs.empty()) return "nothing";
  std::string text;
  for (const auto& out : outputs) {
    if (!text.empty()) text += ", ";
    text += fmt::format("`{}` to connection {}", format_response(out.response), out.connection.value);
  }
  return text;
}

constexpr std::size_t digests_kept = std::size_t{1} << 18;

bool is_reuse_refusal(const Response& response) {
  return response.kind == ResponseKind::error && response.reason == cluster::reused_reason;
}

}  // namespace

std::string session_owner(const cluster::Session& session) {
  return fmt::format("c{}s{}", session.client, session.sequence);
}

std::optional<cluster::Session> owner_session(std::string_view owner) {
  const auto s = owner.find('s');
  if (owner.size() < 4 || owner[0] != 'c' || s == std::string_view::npos) return std::nullopt;
  cluster::Session session;
  const auto parse = [](std::string_view digits, std::uint64_t& value) {
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return error == std::errc{} && end == digits.data() + digits.size() && !digits.empty();
  };
  std::uint64_t client = 0;
  if (!parse(owner.substr(1, s - 1), client) || !parse(owner.substr(s + 1), session.sequence)) return std::nullopt;
  session.client = owner.substr(1, s - 1);
  return session;
}

ClusterChecker::ClusterChecker(RaftChecker& raft, Limits limits, cluster::SessionLimits sessions,
                               DurationMs skew_bound_ms)
    : raft_(raft), session_limits_(sessions), skew_bound_ms_(skew_bound_ms), model_(limits, Token{1}, sessions) {}

void ClusterChecker::fail(const char* checker, std::string what) { raft_.fail(checker, std::move(what)); }

void ClusterChecker::on_send(const cluster::Session& session, DurationMs lease_ms, TimeMs at) {
  auto& si = info(session);
  if (si.lease_ms.value == 0) {
    si.first_sent = at;
    si.lease_ms = lease_ms;
  }
}

std::uint64_t ClusterChecker::key_digest(const cluster::LockMachine& machine, const std::string& key) const {
  // Every field of the key's state, hashed as it is read (no text built:
  // this runs at every apply on every node).
  Digest d;
  d.number(machine.next_token().value);
  d.number(static_cast<std::uint64_t>(machine.clock().value));
  const auto found = machine.keys().find(key);
  if (found != machine.keys().end()) {
    const auto& k = found->second;
    d.text(k.owner);
    d.number(k.token.value);
    d.number(static_cast<std::uint64_t>(k.granted_at.value));
    d.number(static_cast<std::uint64_t>(k.expiry.value));
    for (const auto& [id, w] : k.queue) {
      d.number(id.value);
      d.text(w.owner);
      d.number(static_cast<std::uint64_t>(w.lease_ms.value));
      d.number(static_cast<std::uint64_t>(w.deadline.value));
      d.number(w.connection.value);
      d.text(w.session.client);
      d.number(w.session.sequence);
      d.number(w.epoch);
      d.number(w.detached_at ? static_cast<std::uint64_t>(w.detached_at->value) + 1 : 0);
    }
  }
  return d.hash;
}

void ClusterChecker::before_command(raft::NodeId, raft::Index, const cluster::Command& command,
                                    const cluster::LockMachine& machine) {
  before_.reset();
  const auto* key = cluster::command_key(command);
  if (key == nullptr) return;
  KeyBefore b;
  b.clock = machine.clock();
  b.epoch = std::max(machine.epoch(), cluster::command_epoch(command));
  const auto instant = std::max(machine.clock(), cluster::stamped_time(command));
  const auto found = machine.keys().find(*key);
  if (found != machine.keys().end()) {
    b.held = true;
    b.token = found->second.token;
    b.expiry = found->second.expiry;
    b.owner = found->second.owner;
    // A waiter of an older leadership than the table's after this command
    // is detached: it cannot be granted.
    for (const auto& [id, w] : found->second.queue) {
      if (w.deadline > instant && w.epoch >= b.epoch) {
        b.head_owner = w.owner;
        break;
      }
    }
  }
  before_ = std::move(b);
}

void ClusterChecker::after_command(raft::NodeId node, raft::Index index, const cluster::Command& command,
                                   const cluster::LockMachine& machine, const cluster::Applied& applied, TimeMs now) {
  // The first node to apply an index is the one that moves model_index_ on
  // when the entry is done (entry_applied), so every command of that entry
  // counts as a first application.
  const bool first = index == model_index_ + 1;
  if (index > model_index_ + 1) {
    fail("model-agreement", fmt::format("node {} applied index {} before any node applied {}", node, index,
                                        model_index_ + 1));
    return;
  }
  // The rules first, each on what the table did; then the model, which
  // would also see most of these, but only as answers that differ.
  if (const auto* key = cluster::command_key(command)) {
    const Apply apply{node, index, command, *key, first, now};
    if (agrees_with_first(apply, machine) && before_) check_transition(apply, *before_, machine, applied);
  }
  if (first) first_application(command, index, applied);
}

void ClusterChecker::entry_applied(raft::NodeId node, raft::Index index) {
  if (index > model_index_ + 1) {
    fail("model-agreement", fmt::format("node {} applied index {} before any node applied {}", node, index,
                                        model_index_ + 1));
    return;
  }
  if (index == model_index_ + 1) model_index_ = index;
}

bool ClusterChecker::agrees_with_first(const Apply& apply, const cluster::LockMachine& machine) {
  const auto digest = key_digest(machine, apply.key);
  if (apply.first) {
    digests_[apply.index] = digest;
    if (digests_.size() > digests_kept) digests_.erase(digests_.begin());
    return true;
  }
  const auto found = digests_.find(apply.index);
  if (found == digests_.end() || found->second == digest) return true;
  fail("replica-agreement", fmt::format("node {} holds another state of key `{}` after index {} ({}) than the first "
                                        "node that applied it",
                                        apply.node, apply.key, apply.index, cluster::describe(apply.command)));
  return false;
}

void ClusterChecker::check_transition(const Apply& apply, const KeyBefore& b, const cluster::LockMachine& machine,
                                      const cluster::Applied& applied) {
  const auto after = machine.keys().find(apply.key);
  const bool held_after = after != machine.keys().end();
  const bool ended = b.held && (!held_after || after->second.token != b.token);
  // Only a failure needs the words.
  const auto where = [&] { return fmt::format("node {}, index {}, {}", apply.node, apply.index, cluster::describe(apply.command)); };
  if (ended) {
    // The grant of b.token ended here: only its Release or a valid Expire may end it.
    if (const auto* e = std::get_if<cluster::Expire>(&apply.command)) {
      if (e->token != b.token) {
        fail("expire-valid", fmt::format("{}: an Expire of token {} ended the grant of token {}", where(),
                                         e->token.value, b.token.value));
        return;
      }
      if (e->now < b.expiry) {
        fail("expire-valid", fmt::format("{}: Expire stamped {} ms on its leader's clock ended a lease that ends at {} ms",
                                         where(), e->now.value, b.expiry.value));
        return;
      }
      if (apply.first) ++expires_applied_;
    } else {
      const auto* r = std::get_if<cluster::Release>(&apply.command);
      if (r == nullptr || r->token != b.token) {
        fail("no-lost-grant", fmt::format("{}: the grant of token {} to `{}` ended without its Release or Expire", where(),
                                          b.token.value, b.owner));
        return;
      }
      if (apply.first) {
        if (auto last = last_grant_.find(apply.key); last != last_grant_.end() && last->second.token == b.token) {
          last->second.released = true;
        }
      }
    }
  }
  if (ended && held_after) {
    // A hand-off: to a client that listens, and the oldest waiter not yet
    // due among those must get the key.
    if (apply.first && !granted_to_listener(apply, after->second.owner)) return;
    if (!b.head_owner || *b.head_owner != after->second.owner) {
      fail("fifo", fmt::format("{}: the key went to `{}`, the oldest waiter not yet due is {}", where(),
                               after->second.owner, b.head_owner ? "`" + *b.head_owner + "`" : "nobody"));
      return;
    }
  }
  if (apply.first && held_after && (!b.held || ended)) check_grant(apply, after->second);
  if (apply.first && std::holds_alternative<cluster::Timeout>(apply.command) && !applied.responses.empty()) {
    ++timeouts_applied_;
  }
}

bool ClusterChecker::granted_to_listener(const Apply& apply, std::string_view owner) {
  const auto session = owner_session(owner);
  const auto found = session ? sessions_.find(*session) : sessions_.end();
  if (found == sessions_.end()) return true;  // not one of the simulated clients' (or forgotten)
  const auto epoch = std::max(highest_epoch_, cluster::command_epoch(apply.command));
  if (found->second.epoch >= epoch) return true;
  fail("no-ghost-grant", fmt::format("node {}, index {}, {}: key `{}` handed to `{}`, whose request was last applied "
                                     "under epoch {}; the leadership of epoch {} closed that connection, and no retry "
                                     "of it came since (nobody hears this grant)",
                                     apply.node, apply.index, cluster::describe(apply.command), apply.key, owner,
                                     found->second.epoch, epoch));
  return false;
}

void ClusterChecker::check_grant(const Apply& apply, const cluster::LockMachine::KeyState& granted) {
  if (granted.token <= max_granted_) {
    fail("tokens", fmt::format("index {} ({}) granted token {} on key `{}`; token {} was already granted at a lower "
                               "index",
                               apply.index, cluster::describe(apply.command), granted.token.value, apply.key,
                               max_granted_.value));
    return;
  }
  max_granted_ = granted.token;
  const auto session = owner_session(granted.owner);
  const auto found = session ? sessions_.find(*session) : sessions_.end();
  // The holder counts its lease from when it first sent the request; with
  // no record of that, from the lease end the table holds (later still).
  const TimeMs counted_end = found != sessions_.end() ? found->second.first_sent + found->second.lease_ms : granted.expiry;
  const auto two_s = DurationMs{2 * skew_bound_ms_.value};
  auto& last = last_grant_[apply.key];
  if (last.token.value != 0 && !last.released && apply.now + two_s < last.counted_end) {
    fail("lease-safety",
         fmt::format("key `{}`: token {} granted to `{}` at {} ms (global), but the previous holder `{}` (token {}) "
                     "counts its lease to {} ms and did not release: an overlap of {} ms, the bound 2*S is {} ms",
                     apply.key, granted.token.value, granted.owner, apply.now.value, last.owner, last.token.value,
                     last.counted_end.value, (last.counted_end - apply.now).value, two_s.value));
    return;
  }
  last = Grant{granted.token, std::string(granted.owner.view()), counted_end, false};
}

void ClusterChecker::first_application(const cluster::Command& command, raft::Index index,
                                       const cluster::Applied& applied) {
  const auto expected = expected_for(command, index);
  if (expected != applied.responses) {
    fail("model-agreement", fmt::format("index {} ({}): the lock table answered {}; the sequential model answers {}",
                                        index, cluster::describe(command), show(applied.responses), show(expected)));
  }
}

std::vector<Outbound> ClusterChecker::expected_for(const cluster::Command& command, raft::Index index) {
  const auto* session = command_session(command);
  const auto epoch = cluster::command_epoch(command);
  highest_epoch_ = std::max(highest_epoch_, epoch);
  // The model answers the command, its session and its leadership included.
  Outputs outs = model_.apply(command);
  const bool recorded = session != nullptr && !session->anonymous();
  if (recorded) {
    auto& si = info(*session);
    const bool reuse = !outs.empty() && is_reuse_refusal(outs.front().response);
    if (reuse) {
      if (!si.reused) si.reused = outs.front().response;
      return outs;
    }
    // Where the client listens for a waiter's answer: the leadership of the
    // latest copy applied.
    if (std::holds_alternative<cluster::Acquire>(command)) si.epoch = epoch;
    auto& highest = highest_applied_[session->client];
    if (session->sequence > highest) {
      highest = session->sequence;
      trim_sessions(session->client, highest);
    }
  }
  for (const auto& out : outs) {
    std::optional<cluster::Session> answered;
    if (out.response.kind == ResponseKind::released || out.response.kind == ResponseKind::not_held ||
        out.response.kind == ResponseKind::error) {
      if (recorded) answered = *session;
    } else {
      answered = owner_session(out.response.owner);
    }
    if (!answered) continue;
    auto& si = info(*answered);
    if (!si.answer) {
      si.answer = out.response;
      si.answered_at = index;
    }
  }
  return outs;
}

void ClusterChecker::trim_sessions(const std::string& client, std::uint64_t highest) {
  // Sessions at or below highest - window are stale from now on, whatever
  // was recorded of them; keep one window more for the messages.
  const auto keep_from = highest > 2 * session_limits_.window ? highest - 2 * session_limits_.window : 0;
  auto it = sessions_.lower_bound(cluster::Session{client, 0});
  while (it != sessions_.end() && it->first.client == client && it->first.sequence < keep_from) it = sessions_.erase(it);
}

bool ClusterChecker::on_response(const cluster::Session& outstanding, bool outstanding_is_release, Token release_token,
                                 const Response& response, TimeMs, bool reuses) {
  if (reuses && response.kind == ResponseKind::error) {
    // Another request under the number of the client's last: refused once
    // applied, never told the other's outcome.
    const auto found = sessions_.find(outstanding);
    if (found == sessions_.end() || !found->second.reused || *found->second.reused != response) {
      fail("linearizability", fmt::format("client {} reusing number {} for another request received `{}`; the sequential "
                                          "model answers {} at its log position",
                                          outstanding.client, outstanding.sequence, format_response(response),
                                          found != sessions_.end() && found->second.reused
                                              ? "`" + format_response(*found->second.reused) + "`"
                                              : "nothing yet"));
      return false;
    }
    return true;
  }
  std::optional<cluster::Session> answers;
  if (response.kind == ResponseKind::granted || response.kind == ResponseKind::timed_out ||
      response.kind == ResponseKind::busy) {
    answers = owner_session(response.owner);
  } else if ((response.kind == ResponseKind::released || response.kind == ResponseKind::not_held) &&
             outstanding_is_release && response.token == release_token) {
    answers = outstanding;
  }
  if (!answers || *answers != outstanding) {
    fail("linearizability", fmt::format("client {} waiting for request {} received `{}`, which answers no request it "
                                        "has outstanding on this connection",
                                        outstanding.client, outstanding.sequence, format_response(response)));
    return false;
  }
  const auto found = sessions_.find(outstanding);
  if (found == sessions_.end() || !found->second.answer) {
    fail("linearizability", fmt::format("client {} received `{}` for request {} before its command was committed and "
                                        "applied anywhere",
                                        outstanding.client, format_response(response), outstanding.sequence));
    return false;
  }
  if (*found->second.answer != response) {
    fail("linearizability", fmt::format("client {} received `{}` for request {}; at its log position ({}) the "
                                        "sequential model answers `{}`",
                                        outstanding.client, format_response(response), outstanding.sequence,
                                        found->second.answered_at, format_response(*found->second.answer)));
    return false;
  }
  return true;
}

void ClusterChecker::compare_final(raft::NodeId node, const cluster::LockMachine& machine) {
  if (machine.applied() != model_index_) return;
  const auto ours = cluster::canonical_table(machine);
  const auto reference = model_.canonical();
  if (ours != reference) {
    fail("model-agreement", fmt::format("at the end (index {}) node {}'s lock table holds\n{}\nthe sequential model "
                                        "holds\n{}",
                                        model_index_, node, ours, reference));
  }
}

}  // namespace lockstep::sim
