#include "impl/raft/bugs.hpp"

#include <array>

namespace lockstep::raft {

namespace {

constexpr std::array catalogue{
    RaftBugDescription{RaftBug::double_vote, "double-vote",
                       "a node grants its vote to a second candidate in the same term",
                       "durable-monotonic", 3},
    RaftBugDescription{RaftBug::commit_previous_term, "commit-previous-term",
                       "a leader commits an earlier term's entry once a majority holds it (Figure 8)",
                       "commit-current-term", 3},
    RaftBugDescription{RaftBug::apply_before_commit, "apply-before-commit",
                       "a follower applies entries when it appends them, before they commit",
                       "apply-before-commit", 3},
    RaftBugDescription{RaftBug::stale_log_vote, "stale-log-vote",
                       "a vote is granted to a candidate whose log is behind the voter's",
                       "leader-completeness", 3},
    RaftBugDescription{RaftBug::forget_vote, "forget-vote",
                       "the vote is kept in memory only, so a restarted node may vote again",
                       "persist-before-send", 3},
    RaftBugDescription{RaftBug::commit_unverified, "commit-unverified",
                       "a follower takes the leader's commit index past the entries the append verified",
                       "state-machine-safety", 5},
    RaftBugDescription{RaftBug::commit_regress, "commit-regress",
                       "a follower takes the commit index of a delayed append even when its own is higher",
                       "commit-monotonic", 3},
    RaftBugDescription{RaftBug::skip_prev_check, "skip-prev-check",
                       "a follower appends a leader's entries without checking the entry before them",
                       "log-matching", 3},
    RaftBugDescription{RaftBug::count_replayed_votes, "count-replayed-votes",
                       "a candidate counts a replayed vote response as another vote",
                       "election-safety", 5},
};

}  // namespace

std::span<const RaftBugDescription> raft_bug_catalogue() { return catalogue; }

}  // namespace lockstep::raft
