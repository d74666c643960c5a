// The random Raft simulator: the register workload on the shared harness
// (sim/raft/harness.hpp), whose event loop, faults and checkers it uses.
#include "sim/raft/simulation.hpp"

#include <map>
#include <optional>

#include <fmt/format.h>

#include "impl/prng.hpp"
#include "sim/raft/harness.hpp"

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

// The register workload: a client proposes a fresh value every
// propose_interval_ms to the node it believes leads, and hears "committed"
// when that node applies its entry at the index and term it was given. At
// the end, every value acknowledged (up to settle_ms before the end) must be
// applied on every node.
class RegisterWorkload {
 public:
  using Machine = raft::AppendOnlyRegister;
  using Harness = RaftHarness<RegisterWorkload>;

  explicit RegisterWorkload(const RaftSimParams& params) : p_(params) {}

  Machine make_machine() const { return Machine{}; }

  // The workload's one event: a client proposes, every propose_interval_ms.
  struct Propose {};
  using Event = Propose;
  static std::uint64_t event_subject(const Event&) { return 0; }

  void start(Harness& h) { h.push(TimeMs{0}, Propose{}); }

  void on_event(Harness& h, const Event& e) {
    propose(h);
    if (!h.in_liveness()) h.push(h.now() + p_.propose_interval_ms, e);
  }

  // The client hears "committed" when the node it proposed to applies its
  // entry: same index, same term.
  void on_apply(Harness& h, NodeId id, const raft::Entry& entry, Machine&) {
    const auto found = pending_.find({id, entry.index});
    if (found == pending_.end()) return;
    if (found->second.first == entry.term && found->second.second == entry.data) {
      acknowledged_.push_back({entry.index, entry.data, h.now()});
      ++h.stats().acknowledged;
    }
    pending_.erase(found);
  }

  void on_tick(Harness& h, NodeId id) {
    const auto& node = h.cluster().node(id);
    // The commit index bounds it too: never below applied in a correct node,
    // but the commit-regress bug must reach its checker, not the node's assert.
    const auto upto = std::min(node.applied(), node.commit());
    if (upto < node.snapshot().index + p_.compact_threshold + p_.log_keep) return;
    h.route(h.cluster().compact(id, upto - p_.log_keep));
  }

  void after_event(Harness&) {}
  void on_down(Harness&, NodeId id) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      it = it->first.first == id ? pending_.erase(it) : std::next(it);
    }
  }
  void on_restart(Harness&, NodeId) {}
  void start_liveness(Harness& h) { heal_at_ = h.now(); }
  DurationMs liveness_ms() const { return raft_liveness_ms(p_); }

  void check_liveness(Harness& h) {
    auto& checker = h.checker();
    for (NodeId id = 1; id <= p_.nodes; ++id) {
      std::map<raft::Index, std::string> values;
      for (const auto& v : h.cluster().machine(id).values()) values.emplace(v.index, v.data);
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
                                               id, ack.data, ack.at.value, ack.index, h.cluster().machine(id).applied()));
          return;
        }
      }
    }
  }

 private:
  void propose(Harness& h) {
    auto& cluster = h.cluster();
    if (!cluster.alive(client_target_)) client_target_ = h.random_node(h.workload_prng());
    const auto data = fmt::format("v{}", next_value_++);
    auto out = cluster.propose(client_target_, data, h.local(client_target_));
    switch (out.kind) {
      case raft::ProposeResult::Kind::accepted:
        ++h.stats().proposed;
        pending_[{client_target_, out.index}] = {out.term, data};
        break;
      case raft::ProposeResult::Kind::not_leader:
        client_target_ = out.leader_hint != 0 ? out.leader_hint : h.random_node(h.workload_prng());
        break;
      case raft::ProposeResult::Kind::too_many_uncommitted:
        ++h.stats().refused;
        break;
    }
    h.route(std::move(out.messages));
  }

  RaftSimParams p_;
  NodeId client_target_ = 1;
  std::uint64_t next_value_ = 1;
  std::map<std::pair<NodeId, raft::Index>, std::pair<raft::Term, std::string>> pending_;
  struct Acknowledgement {
    raft::Index index = 0;
    std::string data;
    TimeMs at;
  };
  std::vector<Acknowledgement> acknowledged_;
  TimeMs heal_at_{0};
};

}  // namespace

RaftRunResult run_raft_simulation(const RaftSimParams& params) {
  RegisterWorkload workload(params);
  RaftHarness<RegisterWorkload> harness(params, workload);
  return harness.run();
}

}  // namespace lockstep::sim
