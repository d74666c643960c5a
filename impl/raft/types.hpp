// The vocabulary of the Raft core: node ids, terms, log entries, snapshots,
// the persistent state and the messages nodes exchange. Plain values with
// no behaviour, so that a driver (the simulator, later a server) can copy,
// store and print them. Section numbers refer to the extended Raft paper
// (Ongaro and Ousterhout, 2014); DESIGN.md has the map.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::raft {

// Node ids are 1..N; 0 means "none" (no vote, no known leader).
using NodeId = std::uint32_t;
using Term = std::uint64_t;
using Index = std::uint64_t;

inline constexpr NodeId node_none = 0;

enum class EntryKind : std::uint8_t {
  noop,     // appended by a new leader at the start of its term (§5.4.2, §8)
  command,  // a client's command for the state machine
};

struct Entry {
  Term term = 0;
  Index index = 0;
  EntryKind kind = EntryKind::command;
  std::string data;
  friend bool operator==(const Entry&, const Entry&) = default;
};

// The state machine's bytes at `index`, which ends a term `term` entry (§7).
struct Snapshot {
  Index index = 0;
  Term term = 0;
  std::string data;
  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

// What must be on disk before a node answers anyone (Figure 2).
struct HardState {
  Term term = 0;
  NodeId vote = node_none;
  friend bool operator==(const HardState&, const HardState&) = default;
};

// Everything a node persisted: what a restart starts from (§5.1 recovery).
struct PersistedState {
  HardState hard_state;
  Snapshot snapshot;
  std::vector<Entry> entries;  // the log after snapshot.index, in order
};

enum class MessageType : std::uint8_t {
  pre_vote,           // §9.6: would you vote for me in term+1? (changes no state)
  pre_vote_response,  //
  vote,               // RequestVote (§5.2)
  vote_response,      //
  append,             // AppendEntries; empty entries = heartbeat (§5.3)
  append_response,    //
  snapshot,           // InstallSnapshot, the whole snapshot in one message (§7)
};

std::string_view message_type_name(MessageType type);

// One struct for every message type; each type uses the fields its comment
// names and leaves the others at their defaults.
struct Message {
  MessageType type = MessageType::append;
  NodeId from = node_none;
  NodeId to = node_none;
  Term term = 0;
  // vote, pre_vote: the candidate's last log position (§5.4.1).
  Index last_log_index = 0;
  Term last_log_term = 0;
  // *_response: granted / success.
  bool granted = false;
  // append: the position the entries follow, the entries, the leader's commit.
  Index prev_log_index = 0;
  Term prev_log_term = 0;
  std::vector<Entry> entries;
  Index commit = 0;
  // append_response: on success the highest index known to match the
  // leader's log; on failure `reject_index` is the prev_log_index refused and
  // `hint_index` the follower's guess of the next index to try (§5.3's
  // optimization: skip a whole conflicting term, or to the follower's end).
  Index match_index = 0;
  Index reject_index = 0;
  Index hint_index = 0;
  // snapshot
  Snapshot snapshot;
};

}  // namespace lockstep::raft
