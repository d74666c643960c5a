// The Raft half of a random cluster simulation, shared by the register
// simulator (raft/simulation) and the lock-service simulator (cluster/simulation): the
// event loop, the node-to-node network with delays, loss, duplication and
// reordering, partitions (symmetric, one-way, leader isolation, flapping),
// crashes (some between a write and its sync) and restarts, drifting and
// jumping node clocks, the Raft checkers after every event, and the
// liveness phase (faults heal, crashed nodes restart, a leader must appear
// within leader_bound_ms).
//
// What runs on top is the Workload, which owns what the cluster is used for:
//   using Machine = ...;                       the raft::StateMachine
//   Machine make_machine();
//   using Event = ...;                         its own events (a struct per kind)
//   static std::uint64_t event_subject(const Event&);  what the run's hash takes of one
//   void start(Harness&);                      first workload events (Harness::push)
//   void on_event(Harness&, const Event&);     one of its own events, due
//   void on_apply(Harness&, NodeId, const raft::Entry&, Machine&);
//   void on_tick(Harness&, NodeId);            after the node's tick (compaction, leader duties)
//   void after_event(Harness&);                its checks, after the Raft checks
//   void on_down(Harness&, NodeId);            the node crashed
//   void on_restart(Harness&, NodeId);         the node started again
//   void start_liveness(Harness&);
//   void check_liveness(Harness&);             at the end, when no violation came first
//   DurationMs liveness_ms() const;            the length of the liveness phase
// Randomness: streams forked off the seed, one per purpose (network 1,
// faults 2, workload 3, clocks 4); every container that reaches an output
// is ordered, so a seed gives the same run byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "impl/assert.hpp"
#include "impl/prng.hpp"
#include "sim/core/clock.hpp"
#include "sim/core/event_queue.hpp"
#include "sim/core/network.hpp"
#include "sim/raft/cluster.hpp"
#include "sim/raft/simulation.hpp"

namespace lockstep::sim {

// The harness's events, one struct per kind; the workload's own events
// (Workload::Event) are the last kind.
namespace harness_event {
struct Deliver {
  std::uint32_t slot = 0;  // the node-to-node message's slot in the pool
};
struct Tick {
  raft::NodeId node = 0;
};
struct Fault {};  // draw the next faults
struct Heal {
  std::uint64_t partition = 0;  // the partition it ends, unless another began since
};
// One step of a flapping partition: the node's links go down (odd steps
// left) or up (even), and the last step heals.
struct Flap {
  raft::NodeId node = 0;
  std::uint32_t steps_left = 0;
  std::uint64_t partition = 0;
};
struct Restart {
  raft::NodeId node = 0;
};
struct Liveness {};  // the workload stops, faults heal
}  // namespace harness_event

// An alternative's index is its kind's number in the run's hash (and so in
// a cluster trace's `event_hash`): keep the order, so that a seed keeps its
// hash.
template <class WorkloadEvent>
using HarnessEventOf = std::variant<harness_event::Deliver, harness_event::Tick, harness_event::Fault,
                                    harness_event::Heal, harness_event::Flap, harness_event::Restart,
                                    harness_event::Liveness, WorkloadEvent>;

template <class Workload>
class RaftHarness {
 public:
  using Machine = typename Workload::Machine;
  using NodeId = raft::NodeId;
  using Event = HarnessEventOf<typename Workload::Event>;

  RaftHarness(const RaftSimParams& params, Workload& workload)
      : p_(params),
        workload_(workload),
        root_(params.seed),
        network_(root_.fork(1)),
        faults_(root_.fork(2)),
        workload_prng_(root_.fork(3)),
        queue_(1 << 22),
        pool_(1 << 20),
        clocks_(params.nodes + 1),
        jumps_(params.nodes + 1, DurationMs{0}),
        restart_scheduled_(params.nodes + 1, false),
        blocked_(params.nodes + 1, std::vector<bool>(params.nodes + 1, false)),
        cluster_(params.nodes, params.raft, params.seed, [&workload] { return workload.make_machine(); }) {
    LOCKSTEP_ASSERT(params.nodes >= 1 && params.nodes <= 9);
    Prng clock_prng = root_.fork(4);
    for (NodeId id = 1; id <= p_.nodes; ++id) {
      clocks_[id].offset_ms = DurationMs{clock_prng.between(p_.clock_offset_min_ms.value, p_.clock_offset_max_ms.value)};
      clocks_[id].drift_ppm = clock_prng.between(-p_.clock_drift_max_ppm, p_.clock_drift_max_ppm);
    }
    for (NodeId id = 1; id <= p_.nodes; ++id) cluster_.restart(id, local(id));
    cluster_.on_apply = [this](NodeId id, const raft::Entry& entry, Machine& machine) {
      workload_.on_apply(*this, id, entry, machine);
    };
  }

  // Runs to the end; the result's violations are the checker's.
  RaftRunResult run() {
    for (NodeId id = 1; id <= p_.nodes; ++id) {
      queue_.push(TimeMs{static_cast<std::int64_t>(id)}, harness_event::Tick{id});
    }
    workload_.start(*this);
    queue_.push(TimeMs{0} + p_.fault_interval_ms, harness_event::Fault{});
    queue_.push(TimeMs{0} + p_.duration_ms, harness_event::Liveness{});
    const TimeMs end = TimeMs{0} + p_.duration_ms + workload_.liveness_ms();
    while (!queue_.empty() && queue_.next_time() <= end) {
      const auto entry = queue_.pop();
      ++stats_.events;
      hash(static_cast<std::uint64_t>(entry.at.value));
      hash(static_cast<std::uint64_t>(entry.payload.index()) * 16 + subject(entry.payload));
      try {
        std::visit([this](const auto& typed) { handle(typed); }, entry.payload);
        after_event();
      } catch (const InvariantViolation& e) {
        checker().fail("assert", e.what());
      }
      if (checker().violation_count() > 0 && p_.stop_at_first_violation) break;
    }
    if (checker().violation_count() == 0) check_leader_after_heal();
    if (checker().violation_count() == 0) workload_.check_liveness(*this);
    RaftRunResult result;
    result.params = p_;
    stats_.simulated_until = queue_.now();
    stats_.elections = checker().elections_won();
    stats_.committed = checker().committed_entries();
    stats_.torn_writes = cluster_.torn_writes();
    result.stats = stats_;
    result.violations = checker().violations();
    result.violation_count = checker().violation_count();
    result.event_hash = hash_;
    return result;
  }

  // For the workload.
  const RaftSimParams& params() const { return p_; }
  TimeMs now() const { return queue_.now(); }
  // The node's own clock: its drifting offset from global time plus its jumps.
  TimeMs local(NodeId id) const { return clocks_[id].local(queue_.now()) + jumps_[id]; }
  DurationMs clock_error(NodeId id) const { return local(id) - queue_.now(); }
  RaftClusterOf<Machine>& cluster() { return cluster_; }
  RaftChecker& checker() { return cluster_.checker(); }
  Prng& workload_prng() { return workload_prng_; }
  RaftSimStats& stats() { return stats_; }
  bool in_liveness() const { return liveness_; }
  NodeId leader() const { return leader_; }
  void push(TimeMs at, typename Workload::Event event) { queue_.push(at, Event{std::move(event)}); }
  void hash(std::uint64_t value) {
    hash_ ^= value;
    hash_ *= 0x100000001b3ULL;
  }
  // Sends what a node's step returned over the node-to-node network.
  void route(std::vector<raft::Message> messages) {
    for (auto& m : messages) {
      ++stats_.sent;
      if (m.type == raft::MessageType::snapshot) ++stats_.snapshots_sent;
      if (blocked_[m.from][m.to] || (!liveness_ && network_.chance(p_.loss))) {
        ++stats_.dropped;
        continue;
      }
      const bool twice = !liveness_ && network_.chance(p_.duplicate);
      if (twice) {
        ++stats_.duplicated;
        send(m);
      }
      send(std::move(m));
    }
  }
  NodeId random_node(Prng& prng) const { return static_cast<NodeId>(prng.between(1, p_.nodes)); }

 private:
  // What the run's hash takes of an event besides its kind and instant: the
  // node it is about, or for the workload's, what the workload names.
  static std::uint64_t subject(const Event& e) {
    return std::visit(
        [](const auto& typed) -> std::uint64_t {
          using T = std::decay_t<decltype(typed)>;
          if constexpr (std::is_same_v<T, typename Workload::Event>) {
            return Workload::event_subject(typed);
          } else if constexpr (requires { typed.node; }) {
            return typed.node;
          } else {
            return 0;
          }
        },
        e);
  }

  void handle(const harness_event::Deliver& e) {
    auto message = pool_.take(e.slot);
    hash(static_cast<std::uint64_t>(message.type) * 256 + message.from * 16 + message.to);
    hash(message.term);
    if (blocked_[message.from][message.to]) {
      ++stats_.dropped;
      return;
    }
    route(cluster_.deliver(message, local(message.to)));
  }
  void handle(const harness_event::Tick& e) {
    route(cluster_.tick(e.node, local(e.node)));
    if (cluster_.alive(e.node)) workload_.on_tick(*this, e.node);
    queue_.push(queue_.now() + p_.tick_ms, e);
  }
  void handle(const harness_event::Fault& e) {
    if (liveness_) return;
    draw_faults();
    queue_.push(queue_.now() + p_.fault_interval_ms, e);
  }
  void handle(const harness_event::Heal& e) {
    if (e.partition == partition_generation_) heal();
  }
  void handle(const harness_event::Restart& e) {
    restart_scheduled_[e.node] = false;
    if (!cluster_.alive(e.node)) {
      cluster_.restart(e.node, local(e.node));
      ++stats_.restarts;
      workload_.on_restart(*this, e.node);
    }
  }
  void handle(const harness_event::Liveness&) { start_liveness(); }
  void handle(const typename Workload::Event& e) { workload_.on_event(*this, e); }

  void after_event() {
    cluster_.check(queue_.now());
    for (NodeId id = 1; id <= p_.nodes; ++id) {
      if (cluster_.alive(id)) {
        const auto& node = cluster_.node(id);
        if (node.role() == raft::Role::leader && node.term() > leader_term_) {
          if (leader_ != 0 && leader_ != id) ++stats_.leader_changes;
          leader_ = id;
          leader_term_ = node.term();
        }
        if (liveness_ && !leader_after_heal_ && node.role() == raft::Role::leader) leader_after_heal_ = queue_.now();
        continue;
      }
      if (restart_scheduled_[id]) continue;
      // Crashed, by a fault or between a write and its sync: restart later.
      workload_.on_down(*this, id);
      restart_scheduled_[id] = true;
      const auto delay = liveness_ ? DurationMs{0}
                                   : DurationMs{faults_.chance(0.5) ? faults_.between(1, 100) : faults_.between(100, 3000)};
      queue_.push(queue_.now() + delay, harness_event::Restart{id});
    }
    workload_.after_event(*this);
  }

  // Each copy gets its own delay, so messages overtake each other: the
  // node-to-node network does not keep order.
  void send(raft::Message m) {
    const auto delay = DurationMs{network_.between(p_.latency_min_ms.value, p_.latency_max_ms.value)};
    const auto slot = pool_.put(std::move(m));
    queue_.push(queue_.now() + delay, harness_event::Deliver{slot});
  }

  std::uint32_t crashed() const {
    std::uint32_t count = 0;
    for (NodeId id = 1; id <= p_.nodes; ++id) count += cluster_.alive(id) ? 0 : 1;
    return count;
  }

  void draw_faults() {
    if (faults_.chance(p_.partition) && !partitioned_) start_partition();
    if (faults_.chance(p_.crash) && crashed() < (p_.nodes - 1) / 2) {
      // Half the crashes hit the leader: leader churn is where elections and
      // log repair meet.
      const bool hit_leader = leader_ != 0 && faults_.chance(0.5);
      const auto id = hit_leader ? leader_ : random_node(faults_);
      if (cluster_.alive(id)) {
        ++stats_.crashes;
        if (faults_.chance(p_.torn_crash)) {
          cluster_.crash_before_next_sync(id);
        } else {
          cluster_.crash(id);
        }
      }
    }
    if (faults_.chance(p_.clock_jump)) {
      const auto id = random_node(faults_);
      const auto jump = faults_.between(1, p_.clock_jump_max_ms.value);
      // A jump that would take the clock past its budget is not made, so a
      // bounded skew stays bounded.
      if (jumps_[id].value + jump <= p_.clock_jump_total_max_ms.value) {
        jumps_[id].value += jump;
        ++stats_.clock_jumps;
      }
    }
  }

  void block_both(NodeId a, NodeId b) {
    blocked_[a][b] = true;
    blocked_[b][a] = true;
  }

  void isolate(NodeId id) {
    for (NodeId other = 1; other <= p_.nodes; ++other) {
      if (other != id) block_both(id, other);
    }
  }

  void start_partition() {
    ++stats_.partitions;
    partitioned_ = true;
    ++partition_generation_;
    const auto kind = faults_.below(4);
    if (kind == 0) {
      // symmetric: the nodes split into two sides at random
      std::vector<bool> side(p_.nodes + 1);
      for (NodeId id = 1; id <= p_.nodes; ++id) side[id] = faults_.chance(0.5);
      for (NodeId a = 1; a <= p_.nodes; ++a) {
        for (NodeId b = 1; b <= p_.nodes; ++b) {
          if (side[a] != side[b]) blocked_[a][b] = true;
        }
      }
    } else if (kind == 1) {
      // one-way: some links carry nothing in one direction
      const auto links = faults_.between(1, p_.nodes);
      for (std::int64_t i = 0; i < links; ++i) {
        const auto a = random_node(faults_), b = random_node(faults_);
        if (a != b) blocked_[a][b] = true;
      }
    } else if (kind == 2) {
      // the leader cut off from everyone
      isolate(leader_ != 0 && cluster_.alive(leader_) ? leader_ : random_node(faults_));
    } else {
      // flapping: one node's links go down and up several times
      const auto node = random_node(faults_);
      queue_.push(queue_.now(), harness_event::Flap{node, static_cast<std::uint32_t>(faults_.between(3, 10)),
                                                    partition_generation_});
      return;
    }
    queue_.push(queue_.now() + DurationMs{faults_.between(200, 3000)},
                harness_event::Heal{partition_generation_});
  }

  void handle(const harness_event::Flap& e) {
    if (e.partition != partition_generation_) return;
    if (e.steps_left == 0) {
      heal();
      return;
    }
    if (e.steps_left % 2 == 1) {
      isolate(e.node);
    } else {
      clear_links();
    }
    auto next = e;
    --next.steps_left;
    queue_.push(queue_.now() + DurationMs{faults_.between(30, 400)}, next);
  }

  void clear_links() {
    for (auto& row : blocked_) row.assign(row.size(), false);
  }

  void heal() {
    clear_links();
    partitioned_ = false;
    ++partition_generation_;
  }

  void start_liveness() {
    liveness_ = true;
    heal();
    for (NodeId id = 1; id <= p_.nodes; ++id) {
      if (cluster_.alive(id)) cluster_.cancel_crash_before_sync(id);
    }
    heal_at_ = queue_.now();
    leader_after_heal_.reset();
    workload_.start_liveness(*this);
  }

  void check_leader_after_heal() {
    auto& c = checker();
    if (!leader_after_heal_) {
      c.fail("liveness", fmt::format("no leader within {} ms of the heal", workload_.liveness_ms().value));
      return;
    }
    if (*leader_after_heal_ - heal_at_ > p_.leader_bound_ms) {
      c.fail("liveness", fmt::format("the first leader after the heal came after {} ms, the bound is {} ms",
                                     (*leader_after_heal_ - heal_at_).value, p_.leader_bound_ms.value));
    }
    for (NodeId id = 1; id <= p_.nodes; ++id) {
      if (!cluster_.alive(id)) c.fail("liveness", fmt::format("node {} is down at the end", id));
    }
  }

  RaftSimParams p_;
  Workload& workload_;
  Prng root_, network_, faults_, workload_prng_;
  EventQueue<Event> queue_;
  InFlightPool<raft::Message> pool_;
  std::vector<NodeClock> clocks_;
  std::vector<DurationMs> jumps_;
  std::vector<bool> restart_scheduled_;
  std::vector<std::vector<bool>> blocked_;
  RaftClusterOf<Machine> cluster_;
  RaftSimStats stats_;
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
  NodeId leader_ = 0;
  raft::Term leader_term_ = 0;
  bool partitioned_ = false;
  std::uint64_t partition_generation_ = 0;
  bool liveness_ = false;
  TimeMs heal_at_{0};
  std::optional<TimeMs> leader_after_heal_;
};

}  // namespace lockstep::sim
