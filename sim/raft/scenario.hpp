// Data-driven Raft scenarios in the manner of etcd-io/raft's testdata: a
// text file of commands, each followed by `----` and the output it must
// produce, blocks separated by blank lines, `#` lines as comments. Running a
// file replays the commands against a RaftCluster with the append-only
// register and compares the output; rewriting replaces each output with the
// one produced, for review in a diff.
//
// Commands (node ids are 1..N; each node has its own clock, advanced only by
// `tick`, 10 ms a tick; the election timeout is 10..20 ticks, a heartbeat 1):
//   add-nodes N [pre-vote=false] [check-quorum=false] [inflight=K] [batch=K] [uncommitted=K]
//   campaign I             start an election on I (a pre-vote round first)
//   propose I DATA         a client proposes DATA to I
//   tick I [n=K]           advance I's clock by K ticks, ticking after each
//   deliver [n=K]          deliver the messages in flight, K rounds (default 1)
//   stabilize              deliver until nothing is in flight
//   drop                   lose every message in flight
//   partition A,B|C,...    cut every link between groups; unlisted nodes form one more group
//   cut I>J                drop messages from I to J only
//   heal                   restore every link
//   crash I / restart I    crash loses nothing synced; restart recovers from storage
//   compact I INDEX        snapshot I's register through INDEX and drop the log before it
//   status                 one line per node
// Each delivered message is printed, then the state of any node it changed;
// a checker violation is printed as `VIOLATION [checker] ...` where it occurs.
#pragma once

#include <cstdint>
#include <string>

#include "impl/raft/bugs.hpp"

namespace lockstep::sim {

struct ScenarioResult {
  std::string rewritten;  // the file with every output replaced by the produced one
  bool matches = true;    // every produced output equals the file's
  std::string first_mismatch;  // the command whose output differs, with both outputs
  std::uint64_t violations = 0;
};

ScenarioResult run_scenario(const std::string& text, raft::RaftBug bug = raft::RaftBug::none);

}  // namespace lockstep::sim
