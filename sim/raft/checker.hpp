// The Raft checkers (LogCabin's RaftConsensusInvariants habit): a global
// view of every node, judged after every simulated event. Each check names
// the property of the Raft paper it guards (Figure 3):
//   election-safety       at most one leader per term
//   log-matching          one (index, term) names one entry with one predecessor term
//   leader-completeness   a leader holds every entry committed in earlier terms
//   state-machine-safety  no two nodes apply different entries at one index
//   apply-before-commit   a node applies only entries it knows are committed
//   commit-monotonic      a node's commit index never goes back (within one run of it)
//   commit-current-term   a leader's commit index moves only onto an entry of its term (§5.4.2)
//   durable-monotonic     the persisted term never goes back, nor a persisted vote within a term
//   persist-before-send   nothing is sent while the node's writes are unsynced, and what a
//                         message promises is on disk: its term, a granted vote, acked entries
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "impl/raft/node.hpp"
#include "impl/units.hpp"

namespace lockstep::sim {

struct RaftViolation {
  TimeMs at;
  std::string checker;
  std::string what;
};

class RaftChecker {
 public:
  explicit RaftChecker(std::size_t nodes) : last_commit_(nodes + 1, 0) {}

  void on_durable(raft::NodeId node, const raft::HardState& before, const raft::HardState& after);
  void on_entries(const raft::RaftNode& node, const std::vector<raft::Entry>& entries);
  void on_applied(const raft::RaftNode& node, const raft::Entry& entry);
  void on_restart(raft::NodeId node, raft::Index commit) { last_commit_[node] = commit; }
  void on_send_unsynced(raft::NodeId node);
  // After the node's writes are synced: each message it sends against what
  // is durable, since a crash right after the send keeps only that.
  void on_send(const raft::PersistedState& durable, const raft::Message& message);
  // The checks of the whole cluster's state; `live` holds the running nodes.
  void after_event(const std::vector<const raft::RaftNode*>& live, TimeMs at);

  void fail(std::string checker, std::string what);
  const std::vector<RaftViolation>& violations() const { return violations_; }
  std::uint64_t violation_count() const { return violation_count_; }
  std::uint64_t elections_won() const { return leaders_.size(); }
  std::uint64_t committed_entries() const { return committed_.size(); }

 private:
  void check_leader_holds(const raft::RaftNode& leader, raft::Index index, raft::Term term);

  TimeMs now_{0};
  std::map<raft::Term, raft::NodeId> leaders_;
  // log matching: (index, term) -> (a digest of the entry, the previous entry's term)
  std::map<std::pair<raft::Index, raft::Term>, std::pair<std::uint64_t, raft::Term>> entries_;
  std::map<raft::Index, std::pair<raft::Term, std::uint64_t>> applied_;  // index -> (term, digest)
  std::map<raft::Index, raft::Term> committed_;                          // every index some node committed
  std::vector<raft::Index> last_commit_;
  std::vector<RaftViolation> violations_;
  std::uint64_t violation_count_ = 0;
};

std::uint64_t entry_digest(const raft::Entry& entry);

}  // namespace lockstep::sim
