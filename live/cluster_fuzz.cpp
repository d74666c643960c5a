#include "live/cluster_fuzz.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>

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

// One run, in its phases: the cluster started (or the targets named), the
// clients and the plan of faults made, the run with each fault carried out at
// its instant, then the drain and the last readings.
class FuzzRun {
 public:
  explicit FuzzRun(const ClusterFuzzOptions& options)
      : options_(options),
        // Each node's error bound: S when the allowance is 2·S, ten times it
        // beyond the bound.
        clock_error_max_ms_(options.clock_allowance_ms / 2 * (options.clock_beyond_bound ? 10 : 1)) {}

  ClusterFuzzRun run() {
    write_header();
    std::vector<client::NodeAddress> nodes = options_.targets;
    if (!options_.node_command.empty()) {
      if (!start_cluster()) return std::move(run_);
      nodes = cluster_->addresses();
    } else {
      for (const auto& node : nodes) {
        auto& target = run_.history.header.target;
        target += fmt::format("{}{}:{}", target.empty() ? "" : ",", node.host, node.port);
      }
    }
    watch_.emplace(std::chrono::seconds(static_cast<std::int64_t>(options_.duration_s)));
    if (cluster_) watch_all(*cluster_, *watch_);
    recorder_.emplace(run_.history);
    workload_options_ = workload_options();
    workload_.emplace(nodes, workload_options_);
    plan_ = make_plan();
    done_.assign(plan_.size(), NemesisStep{});
    run_until_end();
    finish();
    return std::move(run_);
  }

 private:
  void write_header() {
    auto& header = run_.history.header;
    header.mode = history::Mode::cluster;
    header.limits = options_.limits;
    header.tolerance_ms = options_.tolerance_ms;
    header.seed = options_.seed;
    header.clock_allowance_ms = options_.clock_allowance_ms;
    header.max_lateness_ms = options_.max_lateness_ms;
  }

  bool start_cluster() {
    LockCluster::Options started;
    started.nodes = options_.nodes;
    started.etcd_members = options_.etcd_members;
    started.node_command = options_.node_command;
    started.limits = options_.limits;
    started.relays = std::any_of(options_.nemesis.begin(), options_.nemesis.end(), is_link_fault);
    if (!make_clocks(started)) return false;
    cluster_ = LockCluster::start(started, run_.error, options_.start_patience);
    if (!cluster_) {
      run_.error = "the cluster did not start: " + run_.error;
      return false;
    }
    for (int i = 0; i < cluster_->size(); ++i) run_.node_commands.push_back(cluster_->command(i));
    run_.history.header.target = options_.node_command;
    return true;
  }

  // Each node's clock, when the run makes clocks wrong: false when it cannot.
  bool make_clocks(LockCluster::Options& started) {
    const bool wrong_from_start = options_.skew_clocks || options_.clock_beyond_bound;
    if (!wrong_from_start && std::none_of(options_.nemesis.begin(), options_.nemesis.end(), is_clock_fault)) {
      return true;
    }
    const auto library = faketime_library();
    if (!library) {
      run_.error = "wrong clocks need libfaketime (Debian: apt-get install libfaketime)";
      return false;
    }
    started.faketime_library = *library;
    // Skewed from the start unless only the nemesis steps them; the
    // horizon covers the run and its drain.
    if (wrong_from_start) {
      clocks_ = draw_node_clocks(options_.nodes, clock_error_max_ms_, options_.duration_s + 60, options_.seed);
    } else {
      clocks_.assign(static_cast<std::size_t>(options_.nodes), NodeClock{});
    }
    for (int i = 0; i < options_.nodes; ++i) {
      started.clock_specs.push_back(faketime_spec(clocks_[static_cast<std::size_t>(i)]));
      run_.clocks.push_back(describe_clock(i, clocks_[static_cast<std::size_t>(i)]));
    }
    return true;
  }

  ClusterWorkloadOptions workload_options() {
    ClusterWorkloadOptions workload;
    workload.clients = static_cast<int>(options_.clients);
    workload.keys = static_cast<int>(options_.keys);
    workload.lease_min_ms = options_.lease_min_ms;
    workload.lease_max_ms = options_.lease_max_ms;
    workload.wait_min_ms = options_.wait_min_ms;
    workload.wait_max_ms = options_.wait_max_ms;
    workload.seed = options_.seed;
    // More leases run out than the fault tests' clients let: every one is an
    // Expire the leader owes, on time, after a new leader too.
    workload.let_expire = 0.3;
    workload.wire = [this](int client) { return recorder_->for_client(client); };
    return workload;
  }

  std::vector<NemesisStep> make_plan() const {
    const bool etcd = cluster_ && cluster_->has_etcd();
    NemesisPlanOptions plan_options;
    plan_options.faults = cluster_ ? options_.nemesis : std::vector<NemesisFault>{};
    plan_options.every_s = options_.nemesis_every_s;
    plan_options.nodes = cluster_ ? cluster_->size() : 0;
    plan_options.etcd_members = options_.nemesis_etcd && etcd ? cluster_->etcd().size() : 0;
    plan_options.duration_s = options_.duration_s;
    plan_options.seed = options_.seed;
    plan_options.clock_jump_max_ms = clock_jump_max_ms(clock_error_max_ms_);
    plan_options.store_members = etcd ? cluster_->etcd().size() : 0;
    auto plan = nemesis_plan(plan_options);
    for (auto& step : plan) {
      if (options_.nemesis_at_leader && step.heals < 0 && !step.etcd && step.kind != NemesisStep::Kind::slow_etcd) {
        step.leader = true;
      }
    }
    return plan;
  }

  void run_until_end() {
    const auto end_us = static_cast<std::int64_t>(options_.duration_s * 1e6);
    std::size_t next_step = 0;
    while (recorder_->now_us() < end_us) {
      const auto until_us = next_step < plan_.size() ? std::min(plan_[next_step].at_us, end_us) : end_us;
      // In slices of a second at most, between which the watch reads the
      // processes.
      const auto left_us = std::min<std::int64_t>(until_us - recorder_->now_us(), 1'000'000);
      if (left_us > 0) workload_->run_for(std::chrono::ceil<milliseconds>(std::chrono::microseconds{left_us}));
      watch_->sample();
      while (next_step < plan_.size() && plan_[next_step].at_us <= recorder_->now_us()) carry_out(next_step++);
    }
    // Every fault the plan opened is healed by the run's end (nemesis_plan).
    while (next_step < plan_.size()) carry_out(next_step++);
  }

  // The clients finish what they asked, then the connections close.
  void finish() {
    // A request may be tried for its client's patience after its wait, and
    // an attempt on the wire then still runs to its answer timeout.
    const auto patience = milliseconds{options_.wait_max_ms} + workload_options_.patience +
                          workload_options_.answer_timeout + milliseconds{5'000};
    if (!workload_->drain(patience)) {
      run_.error = fmt::format("requests still pending {} ms after the run", patience.count());
    }
    recorder_->close_all();
    if (cluster_) read_all_last(*cluster_, *watch_);
    watch_->sample(true);
    run_.processes = watch_->processes();
    run_.tester = watch_->tester();
    run_.clients = workload_->stats();
    run_.unexpected_lines = workload_->unexpected().size();
    run_.tester_stall_us = workload_->stall_us();
  }

  // Plan step i as done: a fault aimed at the leader on the node that led
  // then, its heal on the same node.
  void carry_out(std::size_t i) {
    NemesisStep step = plan_[i];
    if (step.leader) {
      const int leader = cluster_->leader(milliseconds{1'000});
      if (leader >= 0) step.index = leader;
    }
    if (step.heals >= 0) step.index = done_[static_cast<std::size_t>(step.heals)].index;
    done_[i] = step;
    std::string aim = step.leader ? " (the leader)" : "";
    if (step.leader && options_.nemesis_at_leader && step.kind == NemesisStep::Kind::cut_etcd) {
      aim = await_leader_busy(step.index).value_or(aim);
    }
    // Recorded before it is done: the fault may act from this instant on.
    recorder_->nemesis(step.what() + aim);
    const auto began = recorder_->now_us();
    if (step.heals < 0) {
      ++(step.etcd ? run_.faults_on_etcd : run_.faults_on_nodes)[nemesis_fault_name(step.fault())];
      run_.faults.push_back({began, nemesis_fault_name(step.fault())});
      if (began > step.at_us) move_heal(i, began - step.at_us);
    }
    if (is_clock_fault(step.fault())) {
      // A step from the node's own clock, and back to it.
      auto clock = clocks_.at(static_cast<std::size_t>(step.index));
      if (step.kind == NemesisStep::Kind::jump_clock) clock.offset_us += step.jump_ms * 1'000;
      if (!cluster_->set_clock(step.index, faketime_spec(clock))) run_.error = "cannot write a node's clock file";
    } else {
      apply(*cluster_, step, *watch_, milliseconds{options_.nemesis_slow_ms});
    }
    run_.nemesis_slowest_us = std::max(run_.nemesis_slowest_us, recorder_->now_us() - began);
    ++run_.nemesis_steps;
  }

  // Waits, with the clients running, until the leader has something to
  // lose: waiters in its queues (a try-lock workload has none: then keys
  // held). Its description then, or none if it never had.
  std::optional<std::string> await_leader_busy(int leader) {
    const bool queues = options_.wait_max_ms > 0;
    for (int tries = 0; tries < 10; ++tries) {
      const auto status = cluster_->status(leader, milliseconds{500});
      if (status && status->leading && (queues ? status->waiters > 0 : status->keys > 0)) {
        return fmt::format(" (the leader, {} keys held, {} waiters)", status->keys, status->waiters);
      }
      workload_->run_for(milliseconds{200});
    }
    return std::nullopt;
  }

  // A fault made later than planned (waiting for the leader's queues, or a
  // slow step) still lasts as long as planned: its heal moves by as much. A
  // cut shorter than the leader's lease shows nothing.
  void move_heal(std::size_t fault, std::int64_t late_us) {
    for (auto j = fault + 1; j < plan_.size(); ++j) {
      if (plan_[j].heals == static_cast<int>(fault)) plan_[j].at_us += late_us;
    }
  }

  const ClusterFuzzOptions& options_;
  const std::int64_t clock_error_max_ms_;
  ClusterFuzzRun run_;
  std::unique_ptr<LockCluster> cluster_;
  std::vector<NodeClock> clocks_;  // each node's, when the clocks are faked
  std::optional<ResourceWatch> watch_;
  std::optional<Recorder> recorder_;
  std::optional<ClusterWorkload> workload_;
  ClusterWorkloadOptions workload_options_;  // what the workload was made with
  std::vector<NemesisStep> plan_;
  std::vector<NemesisStep> done_;  // each plan step as carried out
};

}  // namespace

ClusterFuzzRun run_cluster_fuzz(const ClusterFuzzOptions& options) { return FuzzRun(options).run(); }

}  // namespace lockstep::live
