// The random Raft simulator (TigerBeetle's VOPR shape): a seeded run of a
// 3- or 5-node cluster of the sans-IO node with the append-only register,
// under a node-to-node network with delays, loss, duplication, reordering
// and partitions, node crashes (some between a write and its sync) and
// drifting, jumping per-node clocks. The checkers run after every event. A
// liveness phase ends each run: faults heal, crashed nodes restart, the
// workload stops; a leader must appear within leader_bound_ms of the heal,
// and every command a client was told is committed (up to settle_ms before
// the end) must be applied on every node by the end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "impl/counters.hpp"
#include "impl/raft/bugs.hpp"
#include "impl/raft/node.hpp"
#include "impl/units.hpp"
#include "sim/raft/checker.hpp"

namespace lockstep::sim {

struct RaftSimParams {
  std::uint64_t seed = 1;
  std::uint32_t nodes = 3;
  DurationMs duration_ms{10'000};       // faults and workload
  DurationMs liveness_ms{10'000};       // healed, no workload: the liveness phase (at least; see raft_liveness_ms)
  DurationMs leader_bound_ms{5'000};    // a leader within this of the heal
  DurationMs settle_ms{3'000};          // an acknowledgement this close to the end may still be spreading
  DurationMs tick_ms{10};
  // network
  DurationMs latency_min_ms{1};
  DurationMs latency_max_ms{20};
  double loss = 0;       // a message is dropped
  double duplicate = 0;  // a message is delivered twice (replay)
  // faults, drawn every fault_interval_ms
  DurationMs fault_interval_ms{250};
  double partition = 0;     // a partition starts (symmetric, one-way, leader isolation or flapping)
  double crash = 0;         // a node crashes (at most a minority at once)
  double torn_crash = 0.3;  // of crashes: the node dies between its next write and sync
  double clock_jump = 0;    // a node's clock jumps forward
  DurationMs clock_jump_max_ms{200};
  DurationMs clock_jump_total_max_ms{std::int64_t{1} << 50};  // the sum of one node's jumps
  DurationMs clock_offset_min_ms{0};
  DurationMs clock_offset_max_ms{1'000};
  std::int64_t clock_drift_max_ppm = 20'000;
  // workload and compaction
  DurationMs propose_interval_ms{15};
  std::uint32_t compact_threshold = 48;  // compact when this many applied entries are in the log
  std::uint32_t log_keep = 8;            // entries kept behind the snapshot for slow followers
  raft::RaftConfig raft;                 // id and peers are filled per node
  // Stop at the first violation; a run recorded for its clients' view goes
  // on, to where they see its effects, and so does a run whose trace is
  // validated: the spec may see the fault at a step the checkers judge
  // later, or never.
  bool stop_at_first_violation = true;
};

RaftSimParams raft_default_params(std::uint64_t seed, std::uint32_t nodes);
// Every fault rate drawn from the seed: loss up to 30 %, replay up to 50 %.
RaftSimParams raft_swarm_params(std::uint64_t seed, std::uint32_t nodes);
std::string describe(const RaftSimParams& params);
// The liveness phase's length: liveness_ms, or longer when the limits make
// catching up slow. A follower may lag by the leader's uncommitted entries
// plus the log kept between compactions, and in the worst case it gets one
// append of entries_per_message_max entries per round trip at the largest
// latency; the phase leaves that, the leader bound and the settle time.
DurationMs raft_liveness_ms(const RaftSimParams& params);

struct RaftSimStats {
  std::uint64_t events = 0;
  std::uint64_t elections = 0;       // terms that had a leader
  std::uint64_t leader_changes = 0;  // a leader other than the previous one
  std::uint64_t committed = 0;       // highest index any node committed
  std::uint64_t proposed = 0, acknowledged = 0, refused = 0;
  std::uint64_t sent = 0, dropped = 0, duplicated = 0, snapshots_sent = 0;
  std::uint64_t crashes = 0, torn_writes = 0, restarts = 0, partitions = 0, clock_jumps = 0;
  TimeMs simulated_until{0};
};

// The Raft run's counters, each once with its summary label
// (impl/counters.hpp); events is the swarm runner's own row.
inline constexpr std::array<Counter<RaftSimStats>, 15> raft_counters{{
    {"elections", &RaftSimStats::elections},
    {"leader changes", &RaftSimStats::leader_changes},
    {"commits", &RaftSimStats::committed},
    {"proposals accepted", &RaftSimStats::proposed},
    {"acknowledged", &RaftSimStats::acknowledged},
    {"proposals refused", &RaftSimStats::refused},
    {"messages sent", &RaftSimStats::sent},
    {"messages dropped", &RaftSimStats::dropped},
    {"messages duplicated", &RaftSimStats::duplicated},
    {"snapshots sent", &RaftSimStats::snapshots_sent},
    {"partitions", &RaftSimStats::partitions},
    {"crashes", &RaftSimStats::crashes},
    {"torn writes", &RaftSimStats::torn_writes},
    {"restarts", &RaftSimStats::restarts},
    {"clock jumps", &RaftSimStats::clock_jumps},
}};
static_assert(lists_every_counter(raft_counters, sizeof(std::uint64_t) + sizeof(TimeMs)),
              "a counter of RaftSimStats is missing from raft_counters");

struct RaftRunResult {
  RaftSimParams params;
  RaftSimStats stats;
  std::vector<RaftViolation> violations;
  std::uint64_t violation_count = 0;
  std::uint64_t event_hash = 0;
};

RaftRunResult run_raft_simulation(const RaftSimParams& params);

}  // namespace lockstep::sim
