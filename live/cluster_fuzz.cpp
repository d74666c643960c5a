#include "live/cluster_fuzz.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "live/cluster_workload.hpp"
#include "live/lock_cluster.hpp"
#include "live/node_clocks.hpp"

namespace lockstep::live {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The clients' connections as one history: each client's current
// connection gets a number of the history's own when it opens.
class Recorder {
 public:
  explicit Recorder(history::History& history) : history_(history), start_(Clock::now()) {}

  std::int64_t now_us() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
  }

  client::ClusterClient::WireObserver for_client(int client) {
    return [this, client](client::ClusterClient::Wire what, std::string_view line) { on_wire(client, what, line); };
  }

  void nemesis(const std::string& what) { add(history::EventKind::nemesis, 0, what); }

  // The run's end: the connections still open are closed by the tester.
  void close_all() {
    for (auto& [client, conn] : open_) {
      if (conn != 0) add(history::EventKind::close, conn);
      conn = 0;
    }
  }

 private:
  void on_wire(int client, client::ClusterClient::Wire what, std::string_view line) {
    using Wire = client::ClusterClient::Wire;
    auto& conn = open_[client];
    switch (what) {
      case Wire::connected:
        conn = next_conn_++;
        add(history::EventKind::connect, conn);
        break;
      case Wire::sent: add(history::EventKind::send, conn, std::string(line)); break;
      case Wire::received: add(history::EventKind::recv, conn, std::string(line)); break;
      case Wire::closed:
        add(history::EventKind::close, conn);
        conn = 0;
        break;
      case Wire::lost:
        add(history::EventKind::eof, conn);
        conn = 0;
        break;
    }
  }

  void add(history::EventKind kind, std::uint32_t conn, std::string line = {}) {
    history_.events.push_back(history::Event{now_us(), kind, conn, std::move(line), -1});
  }

  history::History& history_;
  Clock::time_point start_;
  std::map<int, std::uint32_t> open_;  // client -> its open connection (0: none)
  std::uint32_t next_conn_ = 1;
};

std::string process_name(const NemesisStep& step) {
  return step.etcd ? fmt::format("etcd{}", step.index + 1) : fmt::format("n{}", step.index + 1);
}

std::optional<pid_t> process_of(LockCluster& cluster, const NemesisStep& step) {
  if (!step.etcd) return cluster.pid(step.index);
  return cluster.has_etcd() ? cluster.etcd().pid(step.index) : std::nullopt;
}

// Carries out one nemesis step on what was started: a node, or an etcd
// member, each of which can be killed, started, paused, resumed and stopped.
// The resource watch reads a process before it goes and learns of the one
// that replaces it.
// A link fault, or its heal, on the relays; a partition cuts both ways.
void apply_to_links(LockCluster& cluster, const NemesisStep& step, std::chrono::milliseconds slow) {
  auto* relays = cluster.relays();
  if (relays == nullptr) return;
  const auto etcd_links_of = [&](int node, const auto& act) {
    for (const int link : cluster.etcd_links(node)) act(link);
  };
  const auto both = FaultProxy::Direction::both;
  switch (step.kind) {
    case NemesisStep::Kind::cut_etcd: etcd_links_of(step.index, [&](int link) { relays->cut(link, both); }); break;
    case NemesisStep::Kind::heal_etcd: etcd_links_of(step.index, [&](int link) { relays->heal(link); }); break;
    case NemesisStep::Kind::cut_clients: relays->cut(cluster.client_link(step.index), both); break;
    case NemesisStep::Kind::heal_clients: relays->heal(cluster.client_link(step.index)); break;
    case NemesisStep::Kind::cut_peers:
      if (cluster.has_etcd()) relays->cut(cluster.etcd().peer_link(step.index), both);
      break;
    case NemesisStep::Kind::heal_peers:
      if (cluster.has_etcd()) relays->heal(cluster.etcd().peer_link(step.index));
      break;
    case NemesisStep::Kind::slow_etcd:
    case NemesisStep::Kind::heal_slow:
      for (int node = 0; node < cluster.size(); ++node) {
        etcd_links_of(node, [&](int link) {
          if (step.kind == NemesisStep::Kind::slow_etcd) {
            relays->slow(link, both, slow);
          } else {
            relays->heal(link);
          }
        });
      }
      break;
    default: break;
  }
}

void apply(LockCluster& cluster, const NemesisStep& step, ResourceWatch& watch, std::chrono::milliseconds slow) {
  if (is_link_fault(step.fault())) {
    apply_to_links(cluster, step, slow);
    return;
  }
  const bool ends = step.kind == NemesisStep::Kind::kill || step.kind == NemesisStep::Kind::restart;
  const bool begins = step.kind == NemesisStep::Kind::start || step.kind == NemesisStep::Kind::restart;
  if (const auto pid = process_of(cluster, step); ends && pid) watch.stopping(*pid);
  const auto act = [&step](auto& processes) {
    switch (step.kind) {
      case NemesisStep::Kind::kill: processes.kill(step.index); break;
      case NemesisStep::Kind::start: processes.restart(step.index); break;
      case NemesisStep::Kind::pause: processes.pause(step.index); break;
      case NemesisStep::Kind::resume: processes.resume(step.index); break;
      case NemesisStep::Kind::restart:
        processes.stop(step.index);
        processes.restart(step.index);
        break;
      default: break;  // a link's, above
    }
  };
  if (!step.etcd) {
    act(cluster);
  } else if (cluster.has_etcd()) {
    act(cluster.etcd());
  }
  if (const auto pid = process_of(cluster, step); begins && pid) watch.started(process_name(step), *pid);
}

// The processes the cluster started, watched from the start.
void watch_all(LockCluster& cluster, ResourceWatch& watch) {
  for (int i = 0; i < cluster.size(); ++i) {
    if (const auto pid = cluster.pid(i)) watch.started(fmt::format("n{}", i + 1), *pid);
  }
  for (int i = 0; cluster.has_etcd() && i < cluster.etcd().size(); ++i) {
    if (const auto pid = cluster.etcd().pid(i)) watch.started(fmt::format("etcd{}", i + 1), *pid);
  }
}

// Their last readings, before the cluster is stopped.
void read_all_last(LockCluster& cluster, ResourceWatch& watch) {
  watch.sample(true);
  for (int i = 0; i < cluster.size(); ++i) {
    if (const auto pid = cluster.pid(i)) watch.stopping(*pid);
  }
  for (int i = 0; cluster.has_etcd() && i < cluster.etcd().size(); ++i) {
    if (const auto pid = cluster.etcd().pid(i)) watch.stopping(*pid);
  }
}

}  // namespace

ClusterFuzzRun run_cluster_fuzz(const ClusterFuzzOptions& options) {
  ClusterFuzzRun run;
  auto& header = run.history.header;
  header.mode = history::Mode::cluster;
  header.limits = options.limits;
  header.tolerance_ms = options.tolerance_ms;
  header.seed = options.seed;
  header.clock_allowance_ms = options.clock_allowance_ms;
  header.max_lateness_ms = options.max_lateness_ms;

  std::unique_ptr<LockCluster> cluster;
  std::vector<client::NodeAddress> nodes = options.targets;
  // Each node's error bound: S when the allowance is 2·S, ten times it
  // beyond the bound.
  const std::int64_t clock_error_max_ms = options.clock_allowance_ms / 2 * (options.clock_beyond_bound ? 10 : 1);
  std::vector<NodeClock> clocks;  // each node's, when the clocks are faked
  if (!options.node_command.empty()) {
    LockCluster::Options started;
    started.nodes = options.nodes;
    started.etcd_members = options.etcd_members;
    started.node_command = options.node_command;
    started.limits = options.limits;
    started.relays = std::any_of(options.nemesis.begin(), options.nemesis.end(), is_link_fault);
    if (options.skew_clocks || options.clock_beyond_bound ||
        std::any_of(options.nemesis.begin(), options.nemesis.end(), is_clock_fault)) {
      const auto library = faketime_library();
      if (!library) {
        run.error = "wrong clocks need libfaketime (Debian: apt-get install libfaketime)";
        return run;
      }
      started.faketime_library = *library;
      // Skewed from the start unless only the nemesis steps them; the
      // horizon covers the run and its drain.
      if (options.skew_clocks || options.clock_beyond_bound) {
        clocks = draw_node_clocks(options.nodes, clock_error_max_ms, options.duration_s + 60, options.seed);
      } else {
        clocks.assign(static_cast<std::size_t>(options.nodes), NodeClock{});
      }
      for (int i = 0; i < options.nodes; ++i) {
        started.clock_specs.push_back(faketime_spec(clocks[static_cast<std::size_t>(i)]));
        run.clocks.push_back(describe_clock(i, clocks[static_cast<std::size_t>(i)]));
      }
    }
    cluster = LockCluster::start(started, run.error, options.start_patience);
    if (!cluster) {
      run.error = "the cluster did not start: " + run.error;
      return run;
    }
    nodes = cluster->addresses();
    for (int i = 0; i < cluster->size(); ++i) run.node_commands.push_back(cluster->command(i));
    header.target = options.node_command;
  } else {
    for (const auto& node : nodes) {
      header.target += fmt::format("{}{}:{}", header.target.empty() ? "" : ",", node.host, node.port);
    }
  }

  ResourceWatch watch(std::chrono::seconds(static_cast<std::int64_t>(options.duration_s)));
  if (cluster) watch_all(*cluster, watch);
  Recorder recorder(run.history);
  ClusterWorkloadOptions workload_options;
  workload_options.clients = static_cast<int>(options.clients);
  workload_options.keys = static_cast<int>(options.keys);
  workload_options.lease_min_ms = options.lease_min_ms;
  workload_options.lease_max_ms = options.lease_max_ms;
  workload_options.wait_min_ms = options.wait_min_ms;
  workload_options.wait_max_ms = options.wait_max_ms;
  workload_options.seed = options.seed;
  // More leases run out than the fault tests' clients let: every one is an
  // Expire the leader owes, on time, after a new leader too.
  workload_options.let_expire = 0.3;
  workload_options.wire = [&recorder](int client) { return recorder.for_client(client); };
  ClusterWorkload workload(nodes, workload_options);

  NemesisPlanOptions plan_options;
  plan_options.faults = cluster ? options.nemesis : std::vector<NemesisFault>{};
  plan_options.every_s = options.nemesis_every_s;
  plan_options.nodes = cluster ? cluster->size() : 0;
  plan_options.etcd_members = cluster && options.nemesis_etcd && cluster->has_etcd() ? cluster->etcd().size() : 0;
  plan_options.duration_s = options.duration_s;
  plan_options.seed = options.seed;
  plan_options.clock_jump_max_ms = clock_jump_max_ms(clock_error_max_ms);
  plan_options.store_members = cluster && cluster->has_etcd() ? cluster->etcd().size() : 0;
  auto plan = nemesis_plan(plan_options);
  for (auto& step : plan) {
    if (options.nemesis_at_leader && step.heals < 0 && !step.etcd && step.kind != NemesisStep::Kind::slow_etcd) {
      step.leader = true;
    }
  }

  const auto end_us = static_cast<std::int64_t>(options.duration_s * 1e6);
  std::size_t next_step = 0;
  // Each step as done: a fault aimed at the leader on the node that led
  // then, its heal on the same node.
  std::vector<NemesisStep> done(plan.size());
  const auto carry_out = [&](std::size_t i) {
    NemesisStep step = plan[i];
    if (step.leader) {
      const int leader = cluster->leader(milliseconds{1'000});
      if (leader >= 0) step.index = leader;
    }
    if (step.heals >= 0) step.index = done[static_cast<std::size_t>(step.heals)].index;
    done[i] = step;
    std::string aim = step.leader ? " (the leader)" : "";
    if (step.leader && options.nemesis_at_leader && step.kind == NemesisStep::Kind::cut_etcd) {
      // The clients keep running meanwhile: the workload is what fills the
      // leader's queues (a try-lock workload has no waiters: then keys held).
      const bool queues = options.wait_max_ms > 0;
      for (int tries = 0; tries < 10; ++tries) {
        const auto status = cluster->status(step.index, milliseconds{500});
        if (status && status->leading && (queues ? status->waiters > 0 : status->keys > 0)) {
          aim = fmt::format(" (the leader, {} keys held, {} waiters)", status->keys, status->waiters);
          break;
        }
        workload.run_for(milliseconds{200});
      }
    }
    // Recorded before it is done: the fault may act from this instant on.
    recorder.nemesis(step.what() + aim);
    if (step.heals < 0) ++(step.etcd ? run.faults_on_etcd : run.faults_on_nodes)[nemesis_fault_name(step.fault())];
    const auto began = recorder.now_us();
    if (step.heals < 0) run.faults.push_back({began, nemesis_fault_name(step.fault())});
    // A fault made later than planned (waiting for the leader's queues
    // above, or a slow step) still lasts as long as planned: its heal moves
    // by as much. A cut shorter than the leader's lease shows nothing.
    if (step.heals < 0 && began > step.at_us) {
      for (auto j = i + 1; j < plan.size(); ++j) {
        if (plan[j].heals == static_cast<int>(i)) plan[j].at_us += began - step.at_us;
      }
    }
    if (is_clock_fault(step.fault())) {
      // A step from the node's own clock, and back to it.
      auto clock = clocks.at(static_cast<std::size_t>(step.index));
      if (step.kind == NemesisStep::Kind::jump_clock) clock.offset_us += step.jump_ms * 1'000;
      if (!cluster->set_clock(step.index, faketime_spec(clock))) run.error = "cannot write a node's clock file";
    } else {
      apply(*cluster, step, watch, milliseconds{options.nemesis_slow_ms});
    }
    run.nemesis_slowest_us = std::max(run.nemesis_slowest_us, recorder.now_us() - began);
    ++run.nemesis_steps;
  };
  while (recorder.now_us() < end_us) {
    const auto until_us = next_step < plan.size() ? std::min(plan[next_step].at_us, end_us) : end_us;
    // In slices of a second at most, between which the watch reads the
    // processes.
    const auto left_us = std::min<std::int64_t>(until_us - recorder.now_us(), 1'000'000);
    if (left_us > 0) workload.run_for(std::chrono::ceil<milliseconds>(std::chrono::microseconds{left_us}));
    watch.sample();
    while (next_step < plan.size() && plan[next_step].at_us <= recorder.now_us()) carry_out(next_step++);
  }
  // Every fault the plan opened is healed by the run's end (nemesis_plan);
  // the clients finish what they asked, then the connections close.
  while (next_step < plan.size()) carry_out(next_step++);
  // A request may be tried for its client's patience after its wait, and
  // an attempt on the wire then still runs to its answer timeout.
  const auto patience = milliseconds{options.wait_max_ms} + workload_options.patience +
                        workload_options.answer_timeout + milliseconds{5'000};
  if (!workload.drain(patience)) run.error = fmt::format("requests still pending {} ms after the run", patience.count());
  recorder.close_all();
  if (cluster) read_all_last(*cluster, watch);
  watch.sample(true);
  run.processes = watch.processes();
  run.tester = watch.tester();
  run.clients = workload.stats();
  run.unexpected_lines = workload.unexpected().size();
  run.tester_stall_us = workload.stall_us();
  return run;
}

}  // namespace lockstep::live
