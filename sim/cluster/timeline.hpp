// The timeline of a cluster run, for teaching and design review: a row per
// node with its terms as leader (and when it was down), then per key who
// held it when (owner #token), who waited, and marks where the replicated
// table acted: grants, hand-offs on release, Expire commits (a hand-off by
// Expire, or Expire deleting the key) and waiters timed out. Every change
// sits at the global instant of its entry's first application, the moment
// some node's table first held it.
//
// The recorder is fed by the cluster simulator (run_cluster_simulation's
// `timeline`); it only watches, so a run with it is the same run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "impl/cluster/lock_machine.hpp"
#include "impl/raft/types.hpp"
#include "sim/cluster/simulation.hpp"
#include "sim/core/timeline_svg.hpp"

namespace lockstep::sim {

struct LeaderBar {
  raft::NodeId node = 0;
  raft::Term term = 0;
  TimeMs start;
  TimeMs end;
};

struct DownBar {
  raft::NodeId node = 0;
  TimeMs start;
  TimeMs end;
};

class ClusterTimelineRecorder {
 public:
  explicit ClusterTimelineRecorder(std::uint32_t nodes);

  // After every command every node applies; only an entry's first
  // application is drawn. `now` is global time.
  void after_command(raft::NodeId node, raft::Index index, const cluster::Command& command,
                     const cluster::LockMachine& machine, const cluster::Applied& applied, TimeMs now);
  // After every event: whether node `id` runs, and the term it leads (0: it
  // does not lead).
  void node_state(raft::NodeId id, bool alive, raft::Term leads, TimeMs now);
  // Closes what is still open at the end of the run.
  void finish(TimeMs at);

  std::uint32_t nodes() const { return nodes_; }
  const std::vector<TimelineBar>& bars() const { return bars_; }
  const std::vector<TimelineMark>& marks() const { return marks_; }
  const std::vector<LeaderBar>& leaders() const { return leaders_; }
  const std::vector<DownBar>& downs() const { return downs_; }
  // The last instant at which a key's holder or queue changed.
  TimeMs last_change() const { return last_change_; }

 private:
  struct Waiting {
    std::string owner;
    TimeMs start;
    TimeMs deadline;
  };
  struct Track {
    bool held = false;
    std::string owner;
    Token token;
    TimeMs start;
    TimeMs expiry;
    std::map<cluster::WaiterId, Waiting> waiting;
  };
  struct NodeTrack {
    raft::Term term = 0;  // leading in it since `since`, or 0
    TimeMs since;
    bool down = false;
    TimeMs down_since;
  };

  void update_key(const std::string& key, const cluster::Command& command, const cluster::LockMachine& machine,
                  const cluster::Applied& applied, TimeMs now);

  std::uint32_t nodes_;
  raft::Index applied_ = 0;  // the highest index applied anywhere
  raft::NodeId first_ = 0;   // the node that applied it first (an entry may hold several commands)
  std::map<std::string, Track> tracks_;
  std::vector<NodeTrack> node_tracks_;
  std::vector<TimelineBar> bars_;
  std::vector<TimelineMark> marks_;
  std::vector<LeaderBar> leaders_;
  std::vector<DownBar> downs_;
  TimeMs last_change_{0};
};

// At most `keys_max` keys are drawn: the busiest, in key order. Time runs
// to a little after the last change of a key (the end of a run is a quiet
// liveness phase), at most to `end`.
std::string render_cluster_svg(const ClusterTimelineRecorder& recorder, const ClusterSimParams& params, TimeMs end,
                               std::size_t keys_max = 12);

}  // namespace lockstep::sim
