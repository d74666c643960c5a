// A sans-IO Raft node (etcd-io/raft's RawNode shape): no IO, no clock, no
// threads, no global randomness. The driver hands it a message, a tick or a
// proposal together with its local time in milliseconds, and gets back a
// Ready: what to persist, what to send and what to apply. The node owns no
// state machine; the driver applies Ready::committed to one (see
// state_machine.hpp) and hands snapshots back through compact().
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "impl/raft/bugs.hpp"
#include "impl/raft/types.hpp"
#include "impl/prng.hpp"
#include "impl/units.hpp"

namespace lockstep::raft {

struct RaftConfig {
  NodeId id = node_none;
  std::vector<NodeId> peers;  // every member, this node included, ascending
  // A follower campaigns after hearing nothing from a leader for a random
  // time in [election_ms, 2 * election_ms); a leader sends heartbeats every
  // heartbeat_ms and steps down without a quorum heard in election_ms.
  DurationMs election_ms{300};
  DurationMs heartbeat_ms{50};
  // Limits: every queue and table of the node is bounded.
  std::uint32_t inflight_max = 4;             // append messages with entries unacknowledged, per peer
  std::uint32_t entries_per_message_max = 64;  // entries in one append
  std::uint32_t uncommitted_entries_max = 256; // propose refused past this
  bool pre_vote = true;
  bool check_quorum = true;
  RaftBug bug = RaftBug::none;
};

// Validates a configuration; returns a message naming the problem, or empty.
std::string validate(const RaftConfig& config);

enum class Role : std::uint8_t { follower, pre_candidate, candidate, leader };
std::string_view role_name(Role role);

// The outputs of one call, to be handled IN THIS ORDER:
//   1. persist: hard_state (term, vote), then snapshot (drop the log through
//      snapshot.index), then the log: drop every entry from `log_from` on and
//      append `entries` (which start at log_from); then sync;
//   2. send `messages` (only after step 1 is durable: a vote or an append
//      acknowledgement must survive a crash of the node that sent it);
//   3. if restore_snapshot, restore the state machine from `snapshot`; then
//      apply `committed`, which holds only committed entries, in index order.
struct Ready {
  std::optional<HardState> hard_state;
  std::optional<Snapshot> snapshot;
  bool restore_snapshot = false;
  std::optional<Index> log_from;
  std::vector<Entry> entries;
  std::vector<Message> messages;
  std::vector<Entry> committed;

  bool must_persist() const { return hard_state || snapshot || log_from; }
};

struct ProposeResult {
  enum class Kind : std::uint8_t { accepted, not_leader, too_many_uncommitted };
  Kind kind = Kind::not_leader;
  Index index = 0;           // accepted: where the entry sits
  Term term = 0;             // accepted: the term it was proposed in
  NodeId leader_hint = 0;    // not_leader: the leader this node knows, or 0
  Ready ready;
};

class RaftNode {
 public:
  // A fresh node (empty storage) or one restarting from what it persisted.
  RaftNode(RaftConfig config, std::uint64_t seed, const PersistedState& persisted, TimeMs now);

  Ready step(const Message& message, TimeMs now);
  Ready tick(TimeMs now);
  ProposeResult propose(std::string data, TimeMs now);
  // Start an election now (the scenario files' `campaign`): with PreVote on,
  // a pre-vote round first.
  Ready campaign(TimeMs now);
  // Compact the log through `index` (at most the applied index), keeping
  // `data`, the state machine's bytes at that index, as the snapshot.
  Ready compact(Index index, std::string data);

  // Read-only views for drivers, checkers and scenario output.
  NodeId id() const { return config_.id; }
  Role role() const { return role_; }
  Term term() const { return hard_.term; }
  NodeId vote() const { return hard_.vote; }
  NodeId leader() const { return leader_; }
  Index commit() const { return commit_; }
  Index applied() const { return applied_; }
  Index first_index() const { return snapshot_.index + 1; }
  Index last_index() const { return snapshot_.index + log_.size(); }
  Term last_term() const { return term_at(last_index()); }
  const Snapshot& snapshot() const { return snapshot_; }
  const std::vector<Entry>& log() const { return log_; }
  // The term of the entry at `index`, for snapshot.index <= index <= last_index().
  Term term_at(Index index) const;
  const Entry& entry_at(Index index) const;
  TimeMs election_deadline() const { return election_deadline_; }

 private:
  struct Progress {
    Index next = 1;
    Index match = 0;
    std::vector<Index> inflight;   // last index of each unacknowledged append with entries
    bool probing = true;           // next not yet confirmed: one append at a time, no pipelining
    bool snapshot_pending = false;
    bool recent_active = false;    // heard from within the current quorum-check window
  };

  Progress& progress(NodeId peer);
  std::size_t quorum() const { return config_.peers.size() / 2 + 1; }
  bool in_lease(TimeMs now) const;
  bool log_up_to_date(Index last_index, Term last_term) const;
  void reset_election_deadline(TimeMs now);
  void set_hard_state(Term term, NodeId vote);
  void become_follower(Term term, NodeId leader, TimeMs now);
  void start_vote_round(TimeMs now);
  void become_pre_candidate(TimeMs now);
  void become_candidate(TimeMs now);
  void become_leader(TimeMs now);
  void start_election(TimeMs now);
  void broadcast_votes(MessageType type, Term term);
  void count_vote(const Message& message, TimeMs now);
  void handle_vote_request(const Message& message, TimeMs now);
  void handle_append(const Message& message, TimeMs now);
  void handle_append_response(const Message& message);
  void handle_snapshot(const Message& message, TimeMs now);
  void send_append(NodeId peer);
  void heartbeat();
  void reply(const Message& to, MessageType type, bool granted);
  void send(Message message);
  void append_local(Entry entry);
  void truncate_from(Index index);
  void maybe_commit();
  void advance_commit(Index index);
  void collect_committed();
  Ready take_ready();
  void observe_time(TimeMs now);

  RaftConfig config_;
  SplitMix64 prng_;  // the randomized election timeout (§5.2), seeded by the driver
  HardState hard_;
  Snapshot snapshot_;
  std::vector<Entry> log_;  // entries snapshot_.index + 1 ..
  Role role_ = Role::follower;
  NodeId leader_ = node_none;
  Index commit_ = 0;
  Index applied_ = 0;
  TimeMs election_deadline_{0};
  TimeMs heartbeat_deadline_{0};
  TimeMs quorum_check_deadline_{0};
  TimeMs leader_heard_at_{0};
  bool leader_heard_ = false;
  TimeMs last_now_{0};
  std::vector<NodeId> votes_granted_;
  std::vector<NodeId> votes_refused_;
  std::vector<std::pair<NodeId, Progress>> progress_;  // leader only, ordered by id
  Ready ready_;
};

}  // namespace lockstep::raft
