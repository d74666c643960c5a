// Raft bugs that can be injected into the node, so that each checker of the
// simulator can be shown to catch the rule it guards being bent (one
// catalogue, read by tests/bug_catalogues.cmake). A correct node runs with RaftBug::none.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "impl/bug_catalogue.hpp"

namespace lockstep::raft {

enum class RaftBug {
  none,
  double_vote,           // a node votes again in a term it already voted in
  commit_previous_term,  // a leader commits an entry of an earlier term by counting replicas
  apply_before_commit,   // a follower applies entries as soon as they are appended
  stale_log_vote,        // a vote is granted without the log up-to-date check
  forget_vote,           // the vote is not persisted, so a restart may vote twice
  commit_unverified,     // a follower commits past the entries the append verified
  commit_regress,        // a follower lowers its commit index to an older append's
  skip_prev_check,       // a follower appends without checking the entry before the new ones
  count_replayed_votes,  // a candidate counts a replayed vote response again
};

// Each entry also says how the simulator's swarm must show it, so that a
// bug added here is tested without a test list to edit: the checker of
// sim/raft/checker that reports it, and the smallest cluster in which the
// swarm's first seeds do (some need five nodes to lose a majority's entry).
struct RaftBugDescription {
  RaftBug bug;
  std::string_view name;
  std::string_view story;
  std::string_view caught_by;
  std::uint32_t nodes_min;
};

std::span<const RaftBugDescription> raft_bug_catalogue();
// The bug `name` names ("none": the correct service), if any; a bug's name.
inline std::optional<RaftBug> raft_bug_from_name(std::string_view name) { return bug_of_name(raft_bug_catalogue(), name); }
inline std::string_view raft_bug_name(RaftBug bug) { return name_of_bug(raft_bug_catalogue(), bug); }

}  // namespace lockstep::raft
