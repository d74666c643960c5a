// The NDJSON trace of a cluster run (schema in sim/trace/TRACE.md, "Cluster
// traces"): what spec/TraceLockCluster.tla checks against LockCluster.tla.
// One line per step of the replicated lock service as the spec sees it:
// a node elected with the uncommitted entries of its log, a client's next
// request, what a leader's deadline heap yielded, every proposal a leader
// accepted (stamped with its clock), every entry at its first application
// (the commit), every node's apply with the responses it produced and the
// state of the key it touched, snapshot installs and restarts, and every
// response a node sent.
//
// The writer only watches, from points outside the node
// (impl/cluster/node.hpp): the Raft cluster's proposals and elections
// (sim/raft/cluster.hpp), the node's applies (its ApplyObserver), and the
// driver's restarts, heap checks (what a leader's tick or request yielded)
// and replies (sim/cluster/workload.cpp, nodes.cpp). The run is the same with or without it.
// Commands name waiters by the session that queued them (client and
// sequence number), as the spec does.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <ostream>
#include <string>
#include <vector>

#include "impl/cluster/commands.hpp"
#include "impl/cluster/lock_machine.hpp"
#include "impl/cluster/node.hpp"
#include "impl/protocol.hpp"
#include "impl/raft/node.hpp"
#include "sim/cluster/simulation.hpp"
#include "sim/raft/cluster.hpp"

namespace lockstep::sim {

inline constexpr const char* cluster_trace_schema = "lockstep.cluster.trace/1";

class ClusterTraceWriter {
 public:
  ClusterTraceWriter(std::ostream& out, const ClusterSimParams& params);

  // `now` is global time; `clock` a node's own.
  void elect(raft::NodeId node, const raft::RaftNode& raft, TimeMs now);
  void propose(raft::NodeId node, const std::string& data, const RaftProposeOutcome& outcome, TimeMs clock,
               TimeMs now);
  // A leading node asked its heap what is due at `clock` (a tick, or before
  // a request); what it yielded are the Expires and Timeouts among
  // `proposals`. Written when it yielded something or the applied state has
  // a deadline at or before `clock`.
  void heap_due(raft::NodeId node, TimeMs clock, const cluster::LockMachine& machine,
                const std::vector<cluster::Proposal>& proposals, TimeMs now);
  // One command of log entry `index` (of term `term`) applied by `node`.
  void apply(raft::NodeId node, raft::Index index, raft::Term term, const cluster::Command& command,
             const cluster::LockMachine& machine, const cluster::Applied& applied, TimeMs now);
  // A snapshot installed; one restored while the node starts again is part
  // of its restart, written by restart().
  void restore(raft::NodeId node, const cluster::LockMachine& machine, TimeMs now);
  void down(raft::NodeId node) {
    down_.insert(node);
    first_entry_open_ = false;
  }
  void restart(raft::NodeId node, const cluster::LockMachine& machine, TimeMs now);
  // A client gave its outstanding request up, unanswered.
  void give_up(const std::string& client, TimeMs now);
  // A response a node sent (lost on the way or not); redirects and
  // `E too many requests in flight`, sent instead of proposing, are not
  // written.
  void reply(const ClientConnection& connection, const Response& response, TimeMs now);
  // The last line: the run's verdict.
  void finish(TimeMs at, std::uint64_t violations, std::uint64_t event_hash);

  std::uint64_t lines() const { return lines_; }

 private:
  void write(const std::string& line);
  void propose_command(raft::NodeId node, const cluster::Command& command, const RaftProposeOutcome& outcome,
                       TimeMs clock, TimeMs now);
  std::string command_json(const cluster::Command& command, raft::NodeId by) const;
  std::string response_json(const Response& response, const cluster::Command* answering) const;
  raft::NodeId leader_of(raft::Term term) const;

  std::ostream& out_;
  std::uint64_t lines_ = 0;
  raft::Index first_applied_ = 0;                     // the highest index some node applied
  raft::NodeId first_applier_ = 0;                    // the node that applied it first
  bool first_entry_open_ = false;                     // the last apply was a first one: its entry may go on
  std::map<raft::Term, raft::NodeId> leaders_;        // who proposed the entries of a term
  std::map<std::uint64_t, cluster::Session> waiters_;  // waiter id -> the session that queued it
  struct Sent {
    std::uint64_t sequence = 0;
    std::string command;  // as the Send wrote it
  };
  std::map<std::string, Sent> sent_;                  // client -> its last request sent
  std::set<raft::NodeId> down_;                       // crashed, not started again yet
};

}  // namespace lockstep::sim
