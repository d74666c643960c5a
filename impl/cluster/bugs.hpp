// Bugs that can be injected into the cluster's lock table and deadline heap,
// and into the node that serves clients in front of them, so that each
// checker can be shown to catch the cluster rule it guards (one catalogue,
// read by tests/bug_catalogues.cmake). Kept apart from impl/bugs.hpp as the
// Raft bugs are: the simple-mode catalogue is what every simple-mode checker
// must catch, and these rules do not exist in simple mode (token-per-key and
// stale-release are named after their simple-mode twins). A correct cluster
// runs with ClusterBug::none.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "impl/bug_catalogue.hpp"

namespace lockstep::cluster {

enum class ClusterBug {
  none,
  expire_without_token_check,  // Expire(key, token) applies whatever the holder's token
  heap_not_rebuilt,            // a new leader keeps the heap it had instead of rebuilding it
  session_reapply,             // a retried Acquire is applied again instead of answered from the session
  token_per_key,               // each key counts its own tokens instead of the table's one counter
  lifo_expire_handoff,         // an Expire hands the key to the newest waiter, not the oldest
  stale_release,               // a Release with an earlier token of the key frees it too
  restore_forgets_sessions,    // a snapshot is restored without its session table
  answer_before_commit,        // the leader answers an Acquire of a free key before it commits (the node's
                               // request handling, impl/cluster/node.cpp)
  ghost_grant,                 // a hand-off grants a waiter detached by a leader change
  session_ignores_request,     // a request reusing an applied (client, seq) hears that other request's outcome
  serve_without_leadership,    // a node that stopped leading and sees no other leader grants free keys from its
                               // table (the node's request handling, impl/cluster/node.cpp)
};

// Each entry also says which checker of sim/cluster/checker must report it
// first in the simulator's swarm (and, for one bug, a second checker that
// may come first), so that a bug added here is tested without a test list
// to edit. The rule checkers judge the table before the model is asked, so
// model-agreement names only a bug that no single rule names.
struct ClusterBugDescription {
  ClusterBug bug;
  std::string_view name;
  std::string_view story;
  std::string_view caught_by;
  std::string_view or_caught_by = {};
};

std::span<const ClusterBugDescription> cluster_bug_catalogue();
// The bug `name` names ("none": the correct service), if any; a bug's name.
inline std::optional<ClusterBug> cluster_bug_from_name(std::string_view name) { return bug_of_name(cluster_bug_catalogue(), name); }
inline std::string_view cluster_bug_name(ClusterBug bug) { return name_of_bug(cluster_bug_catalogue(), bug); }

}  // namespace lockstep::cluster
