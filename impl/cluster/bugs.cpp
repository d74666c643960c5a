#include "impl/cluster/bugs.hpp"

#include <array>

namespace lockstep::cluster {

namespace {

constexpr std::array catalogue{
    ClusterBugDescription{ClusterBug::expire_without_token_check, "expire-without-token-check",
                          "a late Expire takes the key from whoever holds it now, not only from the token it names",
                          "expire-valid"},
    ClusterBugDescription{ClusterBug::heap_not_rebuilt, "heap-not-rebuilt",
                          "a new leader keeps its old deadline heap, so deadlines applied while it followed never fire",
                          "deadline-heap"},
    ClusterBugDescription{ClusterBug::session_reapply, "session-reapply",
                          "a retried Acquire is applied a second time instead of answered from its session",
                          "model-agreement"},
    ClusterBugDescription{ClusterBug::token_per_key, "token-per-key",
                          "each key counts its own tokens, so tokens repeat across keys and when a key comes back",
                          "tokens"},
    ClusterBugDescription{ClusterBug::lifo_expire_handoff, "lifo-expire-handoff",
                          "an Expire hands the key to the newest waiter instead of the oldest",
                          "fifo"},
    ClusterBugDescription{ClusterBug::stale_release, "stale-release",
                          "a Release with an earlier token of the key frees it from its current holder",
                          "no-lost-grant"},
    ClusterBugDescription{ClusterBug::restore_forgets_sessions, "restore-forgets-sessions",
                          "a node restored from a snapshot forgets the sessions, so it applies again a retry that the "
                          "others answer from the session",
                          "replica-agreement",
                          // Restored without its sessions, a node that then leads applies entries
                          // before any replica can be compared with it: the model disagrees first.
                          "model-agreement"},
    ClusterBugDescription{ClusterBug::answer_before_commit, "answer-before-commit",
                          "the leader grants a key its table shows free as soon as it proposes the Acquire, before "
                          "the entry commits",
                          "linearizability"},
    ClusterBugDescription{ClusterBug::ghost_grant, "ghost-grant",
                          "a hand-off grants a waiter that a leader change detached and no retry attached again, so "
                          "nobody hears the grant and the key is held for the ghost's lease",
                          "no-ghost-grant"},
    ClusterBugDescription{ClusterBug::session_ignores_request, "session-ignores-request",
                          "a request that reuses an applied (client, seq) for another request is answered that "
                          "request's outcome instead of E",
                          "model-agreement"},
    ClusterBugDescription{ClusterBug::serve_without_leadership, "serve-without-leadership",
                          "a node that lost its consensus (etcd) keeps answering from its table past its leader lease: "
                          "it grants a key its table shows free while a new leader may grant it too",
                          "linearizability"},
};

}  // namespace

std::span<const ClusterBugDescription> cluster_bug_catalogue() { return catalogue; }

}  // namespace lockstep::cluster
