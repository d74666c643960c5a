// The random Raft simulator's event loop. Randomness comes from streams
// forked off the seed, one per purpose (network, faults, workload), and every
// container that reaches the outputs is ordered, so a seed gives the same
// run byte for byte.
#include "sim/raft_sim.hpp"

#include <map>
#include <optional>

#include <fmt/format.h>

#include "impl/assert.hpp"
#include "sim/clock.hpp"
#include "sim/event_queue.hpp"
#include "sim/network.hpp"
#include "sim/prng.hpp"
#include "sim/raft_cluster.hpp"

namespace lockstep::sim {

RaftSimParams raft_default_params(std::uint64_t seed, std::uint32_t nodes) {
  RaftSimParams p;
  p.seed = seed;
  p.nodes = nodes;
  p.loss = 0.02;
  p.duplicate = 0.02;
  p.partition = 0.05;
  p.crash = 0.02;
  p.clock_jump = 0.02;
  return p;
}

RaftSimParams raft_swarm_params(std::uint64_t seed, std::uint32_t nodes) {
  Prng prng(seed ^ 0x5241465453574152ULL);  // "RAFTSWAR": apart from the run's own streams
  RaftSimParams p = raft_default_params(seed, nodes);
  p.loss = prng.chance(0.2) ? 0 : prng.unit() * 0.30;
  p.duplicate = prng.chance(0.2) ? 0 : prng.unit() * 0.50;
  p.latency_min_ms = DurationMs{prng.between(0, 5)};
  p.latency_max_ms = DurationMs{p.latency_min_ms.value + prng.between(1, 60)};
  p.partition = prng.chance(0.2) ? 0 : prng.unit() * 0.15;
  p.crash = prng.chance(0.3) ? 0 : prng.unit() * 0.04;
  p.torn_crash = prng.unit();
  p.clock_jump = prng.unit() * 0.05;
  p.clock_drift_max_ppm = prng.between(0, 50'000);
  p.propose_interval_ms = DurationMs{prng.between(2, 60)};
  p.compact_threshold = static_cast<std::uint32_t>(prng.between(8, 128));
  p.log_keep = static_cast<std::uint32_t>(prng.between(0, 16));
  p.raft.inflight_max = static_cast<std::uint32_t>(prng.between(1, 8));
  p.raft.entries_per_message_max = static_cast<std::uint32_t>(prng.between(1, 64));
  // A third of the seeds are storms: frequent partitions and crashes, small
  // appends. Divergent logs, repairs and elections during repair come from
  // these; the gentler seeds show progress under ordinary faults.
  if (prng.chance(1.0 / 3)) {
    p.partition = 0.2 + prng.unit() * 0.4;
    p.crash = 0.05 + prng.unit() * 0.25;
    p.raft.entries_per_message_max = static_cast<std::uint32_t>(prng.between(1, 4));
  }
  return p;
}

std::string describe(const RaftSimParams& p) {
  return fmt::format(
      "nodes={} duration={}ms latency={}..{}ms loss={:.3f} duplicate={:.3f} partition={:.3f} crash={:.3f} "
      "torn={:.2f} jump={:.3f} drift={}ppm propose-every={}ms compact={}/{} inflight={} batch={} bug={}",
      p.nodes, p.duration_ms.value, p.latency_min_ms.value, p.latency_max_ms.value, p.loss, p.duplicate, p.partition,
      p.crash, p.torn_crash, p.clock_jump, p.clock_drift_max_ppm, p.propose_interval_ms.value, p.compact_threshold,
      p.log_keep, p.raft.inflight_max, p.raft.entries_per_message_max, raft::raft_bug_name(p.raft.bug));
}

DurationMs raft_liveness_ms(const RaftSimParams& p) {
  const std::int64_t lag_max = p.raft.uncommitted_entries_max + p.compact_threshold + p.log_keep + 1;
  const std::int64_t appends = (lag_max + p.raft.entries_per_message_max - 1) / p.raft.entries_per_message_max;
  const std::int64_t catch_up_ms = appends * 2 * (p.latency_max_ms.value + p.tick_ms.value);
  const std::int64_t needed_ms = p.leader_bound_ms.value + catch_up_ms + p.settle_ms.value;
  return DurationMs{std::max(p.liveness_ms.value, needed_ms)};
}

namespace {

using raft::NodeId;

enum class EventKind : std::uint8_t { deliver, tick, propose, fault, heal, flap, restart, liveness };

struct Event {
  EventKind kind = EventKind::tick;
  NodeId node = 0;
  std::uint32_t slot = 0;        // deliver: the message's pool slot
  std::uint64_t generation = 0;  // heal, flap: which partition
};

class RaftSimulation {
 public:
  explicit RaftSimulation(const RaftSimParams& params)
      : p_(params),
        root_(params.seed),
        network_(root_.fork(1)),
        faults_(root_.fork(2)),
        workload_(root_.fork(3)),
        queue_(1 << 22),
        pool_(1 << 20),
        clocks_(params.nodes + 1),
        jumps_(params.nodes + 1, DurationMs{0}),
        restart_scheduled_(params.nodes + 1, false),
        blocked_(params.nodes + 1, std::vector<bool>(params.nodes + 1, false)),
        cluster_(params.nodes, params.raft, params.seed) {
    LOCKSTEP_ASSERT(params.nodes >= 1 && params.nodes <= 9);
    Prng clock_prng = root_.fork(4);
    for (NodeId id = 1; id <= p_.nodes; ++id) {
      clocks_[id].offset_ms = DurationMs{clock_prng.between(0, p_.clock_offset_max_ms.value)};
      clocks_[id].drift_ppm = clock_prng.between(-p_.clock_drift_max_ppm, p_.clock_drift_max_ppm);
    }
    for (NodeId id = 1; id <= p_.nodes; ++id) cluster_.restart(id, local(id));
    cluster_.on_apply = [this](NodeId id, const raft::Entry& entry, raft::AppendOnlyRegister&) { acknowledge(id, entry); };
  }

  RaftRunResult run() {
    for (NodeId id = 1; id <= p_.nodes; ++id) {
      queue_.push(TimeMs{static_cast<std::int64_t>(id)}, Event{EventKind::tick, id, 0, 0});
    }
    queue_.push(TimeMs{0}, Event{EventKind::propose});
    queue_.push(TimeMs{0} + p_.fault_interval_ms, Event{EventKind::fault});
    queue_.push(TimeMs{0} + p_.duration_ms, Event{EventKind::liveness});
    const TimeMs end = TimeMs{0} + p_.duration_ms + raft_liveness_ms(p_);
    while (!queue_.empty() && queue_.next_time() <= end) {
      const auto entry = queue_.pop();
      ++stats_.events;
      hash(static_cast<std::uint64_t>(entry.at.value));
      hash(static_cast<std::uint64_t>(entry.payload.kind) * 16 + entry.payload.node);
      try {
        handle(entry.payload);
        after_event();
      } catch (const InvariantViolation& e) {
        cluster_.checker().fail("assert", e.what());
      }
      if (cluster_.checker().violation_count() > 0) break;
    }
    if (cluster_.checker().violation_count() == 0) check_liveness();
    RaftRunResult result;
    result.params = p_;
    stats_.simulated_until = queue_.now();
    stats_.elections = cluster_.checker().elections_won();
    stats_.committed = cluster_.checker().committed_entries();
    stats_.torn_writes = cluster_.torn_writes();
    result.stats = stats_;
    result.violations = cluster_.checker().violations();
    result.violation_count = cluster_.checker().violation_count();
    result.event_hash = hash_;
    return result;
  }

 private:
  TimeMs local(NodeId id) const { return clocks_[id].local(queue_.now()) + jumps_[id]; }

  void hash(std::uint64_t value) {
    hash_ ^= value;
    hash_ *= 0x100000001b3ULL;
  }

  void handle(const Event& e) {
    switch (e.kind) {
      case EventKind::deliver: {
        auto message = pool_.take(e.slot);
        hash(static_cast<std::uint64_t>(message.type) * 256 + message.from * 16 + message.to);
        hash(message.term);
        if (blocked_[message.from][message.to]) {
          ++stats_.dropped;
          return;
        }
        route(cluster_.deliver(message, local(message.to)));
        return;
      }
      case EventKind::tick:
        route(cluster_.tick(e.node, local(e.node)));
        maybe_compact(e.node);
        queue_.push(queue_.now() + p_.tick_ms, e);
        return;
      case EventKind::propose:
        propose();
        if (!liveness_) queue_.push(queue_.now() + p_.propose_interval_ms, e);
        return;
      case EventKind::fault:
        if (liveness_) return;
        draw_faults();
        queue_.push(queue_.now() + p_.fault_interval_ms, e);
        return;
      case EventKind::heal:
        if (e.generation == partition_generation_) heal();
        return;
      case EventKind::flap:
        flap(e);
        return;
      case EventKind::restart:
        restart_scheduled_[e.node] = false;
        if (!cluster_.alive(e.node)) {
          cluster_.restart(e.node, local(e.node));
          ++stats_.restarts;
        }
        return;
      case EventKind::liveness:
        start_liveness();
        return;
    }
  }

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
      for (auto it = pending_.begin(); it != pending_.end();) {
        it = it->first.first == id ? pending_.erase(it) : std::next(it);
      }
      restart_scheduled_[id] = true;
      const auto delay = liveness_ ? DurationMs{0} : DurationMs{faults_.chance(0.5) ? faults_.between(1, 100) : faults_.between(100, 3000)};
      queue_.push(queue_.now() + delay, Event{EventKind::restart, id});
    }
  }

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

  // Each copy gets its own delay, so messages overtake each other: the
  // node-to-node network does not keep order.
  void send(raft::Message m) {
    const auto delay = DurationMs{network_.between(p_.latency_min_ms.value, p_.latency_max_ms.value)};
    const auto slot = pool_.put(std::move(m));
    queue_.push(queue_.now() + delay, Event{EventKind::deliver, 0, slot});
  }

  void propose() {
    if (!cluster_.alive(client_target_)) client_target_ = random_node(workload_);
    const auto data = fmt::format("v{}", next_value_++);
    auto out = cluster_.propose(client_target_, data, local(client_target_));
    switch (out.kind) {
      case raft::ProposeResult::Kind::accepted:
        ++stats_.proposed;
        pending_[{client_target_, out.index}] = {out.term, data};
        break;
      case raft::ProposeResult::Kind::not_leader:
        client_target_ = out.leader_hint != 0 ? out.leader_hint : random_node(workload_);
        break;
      case raft::ProposeResult::Kind::too_many_uncommitted:
        ++stats_.refused;
        break;
    }
    route(std::move(out.messages));
  }

  // The client hears "committed" when the node it proposed to applies its
  // entry: same index, same term.
  void acknowledge(NodeId id, const raft::Entry& entry) {
    const auto found = pending_.find({id, entry.index});
    if (found == pending_.end()) return;
    if (found->second.first == entry.term && found->second.second == entry.data) {
      acknowledged_.push_back({entry.index, entry.data, queue_.now()});
      ++stats_.acknowledged;
    }
    pending_.erase(found);
  }

  void maybe_compact(NodeId id) {
    if (!cluster_.alive(id)) return;
    const auto& node = cluster_.node(id);
    // The commit index bounds it too: never below applied in a correct node,
    // but the commit-regress bug must reach its checker, not the node's assert.
    const auto upto = std::min(node.applied(), node.commit());
    if (upto < node.snapshot().index + p_.compact_threshold + p_.log_keep) return;
    route(cluster_.compact(id, upto - p_.log_keep));
  }

  NodeId random_node(Prng& prng) const { return static_cast<NodeId>(prng.between(1, p_.nodes)); }

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
      jumps_[id].value += faults_.between(1, p_.clock_jump_max_ms.value);
      ++stats_.clock_jumps;
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
      flap_node_ = random_node(faults_);
      queue_.push(queue_.now(), Event{EventKind::flap, flap_node_, static_cast<std::uint32_t>(faults_.between(3, 10)),
                                      partition_generation_});
      return;
    }
    queue_.push(queue_.now() + DurationMs{faults_.between(200, 3000)},
                Event{EventKind::heal, 0, 0, partition_generation_});
  }

  void flap(const Event& e) {
    if (e.generation != partition_generation_) return;
    if (e.slot == 0) {
      heal();
      return;
    }
    if (e.slot % 2 == 1) {
      isolate(e.node);
    } else {
      clear_links();
    }
    auto next = e;
    --next.slot;
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
  }

  void check_liveness() {
    auto& checker = cluster_.checker();
    if (!leader_after_heal_) {
      checker.fail("liveness", fmt::format("no leader within {} ms of the heal", raft_liveness_ms(p_).value));
      return;
    }
    if (*leader_after_heal_ - heal_at_ > p_.leader_bound_ms) {
      checker.fail("liveness", fmt::format("the first leader after the heal came after {} ms, the bound is {} ms",
                                           (*leader_after_heal_ - heal_at_).value, p_.leader_bound_ms.value));
    }
    for (NodeId id = 1; id <= p_.nodes; ++id) {
      if (!cluster_.alive(id)) {
        checker.fail("liveness", fmt::format("node {} is down at the end", id));
        continue;
      }
      std::map<raft::Index, std::string> values;
      for (const auto& v : cluster_.machine(id).values()) values.emplace(v.index, v.data);
      // The entries the leader still had uncommitted at the heal go on
      // committing (and being acknowledged) during the liveness phase; an
      // acknowledgement in its last settle_ms may not have reached every
      // node yet, so only those before are required.
      const auto end = heal_at_ + raft_liveness_ms(p_);
      for (const auto& ack : acknowledged_) {
        if (end - ack.at < p_.settle_ms) continue;
        const auto found = values.find(ack.index);
        if (found == values.end() || found->second != ack.data) {
          checker.fail("liveness", fmt::format("node {} has not applied {}, acknowledged at {} ms at index {} (applied {})",
                                               id, ack.data, ack.at.value, ack.index, cluster_.machine(id).applied()));
          return;
        }
      }
    }
  }

  RaftSimParams p_;
  Prng root_, network_, faults_, workload_;
  EventQueue<Event> queue_;
  InFlightPool<raft::Message> pool_;
  std::vector<NodeClock> clocks_;
  std::vector<DurationMs> jumps_;
  std::vector<bool> restart_scheduled_;
  std::vector<std::vector<bool>> blocked_;
  RaftCluster cluster_;
  RaftSimStats stats_;
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
  NodeId client_target_ = 1;
  std::uint64_t next_value_ = 1;
  std::map<std::pair<NodeId, raft::Index>, std::pair<raft::Term, std::string>> pending_;
  struct Acknowledgement {
    raft::Index index = 0;
    std::string data;
    TimeMs at;
  };
  std::vector<Acknowledgement> acknowledged_;
  NodeId leader_ = 0;
  raft::Term leader_term_ = 0;
  bool partitioned_ = false;
  std::uint64_t partition_generation_ = 0;
  NodeId flap_node_ = 0;
  bool liveness_ = false;
  TimeMs heal_at_{0};
  std::optional<TimeMs> leader_after_heal_;
};

}  // namespace

RaftRunResult run_raft_simulation(const RaftSimParams& params) {
  RaftSimulation simulation(params);
  return simulation.run();
}

}  // namespace lockstep::sim
