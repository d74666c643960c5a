#include "live/cluster_fuzz_run.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "live/fuzz_limits.hpp"
#include "live/node_clocks.hpp"

namespace lockstep::live {

namespace {

// --target HOST:PORT,... into the nodes to fuzz; false after one line.
bool read_targets(const std::string& list, std::vector<client::NodeAddress>& targets) {
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const auto end = std::min(list.find(',', begin), list.size());
    const auto item = list.substr(begin, end - begin);
    const auto address = client::parse_node_address(item);
    if (!address) {
      fmt::print(stderr, "lockstep fuzz: --target {}: a node is an IPv4 address and a port (127.0.0.1:7001)\n", item);
      return false;
    }
    targets.push_back(*address);
    begin = end + 1;
  }
  return true;
}

// Whether the nemesis draws `fault`.
bool has_fault(const ClusterFuzzOptions& f, NemesisFault fault) {
  return std::find(f.nemesis.begin(), f.nemesis.end(), fault) != f.nemesis.end();
}

// Simple mode's options, which cluster mode refuses; false after one line.
bool refuse_simple_options(const FuzzRequest& request) {
  for (const char* flag : {"--exec", "--restart-every-s", "--strict-syntax", "--no-limits", "--mean-gap-ms",
                           "--sweep-ms"}) {
    if (request.was_given(flag)) {
      fmt::print(stderr, "lockstep fuzz: {} is simple mode's; --mode cluster does not take it\n", flag);
      return false;
    }
  }
  return true;
}

// Exactly one of --target and --exec-node; with --target, no option that
// acts on started nodes, and the targets read. False after one line.
bool read_nodes(FuzzRequest& request) {
  auto& c = request.cluster;
  if (request.target.empty() == c.node_command.empty()) {
    fmt::print(stderr, "lockstep fuzz: --mode cluster takes exactly one of --target HOST:PORT,... and --exec-node 'CMD'\n");
    return false;
  }
  if (request.target.empty()) return true;
  for (const char* flag : {"--nodes", "--etcd-members", "--nemesis", "--nemesis-every-s", "--nemesis-etcd",
                           "--nemesis-slow-ms", "--nemesis-at-leader", "--skew-clocks", "--clock-beyond-bound"}) {
    if (request.was_given(flag)) {
      fmt::print(stderr, "lockstep fuzz: {} acts on nodes the fuzzer starts (--exec-node); with --target there is nothing to "
                         "start or act on\n",
                 flag);
      return false;
    }
  }
  return read_targets(request.target, c.fuzz.targets);
}

// --nemesis into its faults, and the nemesis's options refused without it;
// false after one line.
bool read_nemesis(FuzzRequest& request) {
  auto& c = request.cluster;
  if (request.was_given("--nemesis")) {
    std::string error;
    const auto faults = parse_nemesis_faults(c.nemesis, error);
    if (!faults) {
      fmt::print(stderr, "lockstep fuzz: --nemesis: {}\n", error);
      return false;
    }
    c.fuzz.nemesis = *faults;
  } else if (request.was_given("--nemesis-every-s") || request.was_given("--nemesis-etcd") ||
             request.was_given("--nemesis-at-leader")) {
    fmt::print(stderr, "lockstep fuzz: --nemesis-every-s, --nemesis-etcd and --nemesis-at-leader need --nemesis (a list of "
                       "faults, or all)\n");
    return false;
  }
  return true;
}

// What the faults chosen need of the other options; false after one line.
bool check_fault_needs(const FuzzRequest& request) {
  const auto& c = request.cluster;
  const auto& f = c.fuzz;
  if (request.was_given("--nemesis-slow-ms") && !has_fault(f, NemesisFault::slow_etcd)) {
    fmt::print(stderr, "lockstep fuzz: --nemesis-slow-ms is slow-etcd's delay: give --nemesis slow-etcd (or all)\n");
    return false;
  }
  const bool links = std::any_of(f.nemesis.begin(), f.nemesis.end(), is_link_fault);
  if (links && c.etcd_members == 0 &&
      (has_fault(f, NemesisFault::partition_node) || has_fault(f, NemesisFault::slow_etcd))) {
    fmt::print(stderr, "lockstep fuzz: partition-node and slow-etcd act on the nodes' etcd links: give --etcd-members M\n");
    return false;
  }
  if (has_fault(f, NemesisFault::etcd_minority) && c.etcd_members < 3) {
    fmt::print(stderr, "lockstep fuzz: etcd-minority cuts one etcd member from the others, which must still be a "
                       "majority: give --etcd-members 3 or more\n");
    return false;
  }
  if (links && c.node_command.find("{advertise}") == std::string::npos) {
    fmt::print(stderr, "lockstep fuzz: the link faults put relays before the nodes: --exec-node must advertise "
                       "{{advertise}} (--advertise {{advertise}}), which is where clients reach a node\n");
    return false;
  }
  return true;
}

// The node clocks made wrong (--skew-clocks, --clock-beyond-bound,
// clock-jump): one way at a time, a bound they can be wrong within, and
// libfaketime to do it. False after one line.
bool check_clocks(const ClusterFuzzRequest& c) {
  const bool clocks = c.skew_clocks || c.clock_beyond_bound || has_fault(c.fuzz, NemesisFault::clock_jump);
  if (c.skew_clocks && c.clock_beyond_bound) {
    fmt::print(stderr, "lockstep fuzz: --skew-clocks keeps the clocks within the allowance and --clock-beyond-bound "
                       "takes them past it: give one\n");
    return false;
  }
  // Each node's error bound is half the allowance: below 2 ms it rounds to
  // nothing, and the clocks would not be wrong at all.
  if (clocks && c.clock_allowance_ms < 2) {
    fmt::print(stderr, "lockstep fuzz: --skew-clocks, --clock-beyond-bound and clock-jump keep each node's clock "
                       "error within half --clock-allowance-ms (or ten times that): give --clock-allowance-ms 2 or "
                       "more\n");
    return false;
  }
  if (clocks && !faketime_library()) {
    fmt::print(stderr, "lockstep fuzz: --skew-clocks, --clock-beyond-bound and clock-jump run the nodes under "
                       "libfaketime, which is not installed (Debian: apt-get install libfaketime)\n");
    return false;
  }
  return true;
}

// The etcd members the options need, and a nemesis period that fits in the
// run; false after one line.
bool check_etcd_and_period(const FuzzRequest& request) {
  const auto& c = request.cluster;
  if (c.nemesis_etcd && c.etcd_members == 0) {
    fmt::print(stderr, "lockstep fuzz: --nemesis-etcd acts on etcd members: give --etcd-members M\n");
    return false;
  }
  if (!c.node_command.empty() && c.etcd_members == 0 && c.node_command.find("{etcd}") != std::string::npos) {
    fmt::print(stderr, "lockstep fuzz: --exec-node names {{etcd}}: give --etcd-members M so that the fuzzer starts them\n");
    return false;
  }
  if (!c.fuzz.nemesis.empty() && c.nemesis_every_s > request.fuzz.duration_s) {
    fmt::print(stderr, "lockstep fuzz: --nemesis-every-s {} is longer than the run (--duration-s {}): the nemesis would never act\n",
               c.nemesis_every_s, request.fuzz.duration_s);
    return false;
  }
  return true;
}

// The nodes, the nemesis and the etcd members checked against each other;
// false after one line on stderr.
bool read_cluster_options(FuzzRequest& request) {
  return refuse_simple_options(request) && read_nodes(request) && read_nemesis(request) &&
         check_fault_needs(request) && check_clocks(request.cluster) && check_etcd_and_period(request);
}

// The options of both modes carried over to the cluster's run.
void fill_options(FuzzRequest& request) {
  const auto& c = request.cluster;
  auto& f = request.cluster.fuzz;
  f.node_command = c.node_command;
  f.nodes = c.nodes;
  f.etcd_members = c.etcd_members;
  f.limits = request.fuzz.limits;
  f.clients = request.fuzz.clients;
  // Fewer keys per client make more hand-offs, and more for the checker to
  // search through a cluster's late Expires: 16 keys unless told.
  f.keys = request.was_given("--keys") ? request.fuzz.keys : 16;
  f.duration_s = request.fuzz.duration_s;
  f.seed = request.fuzz.seed;
  f.tolerance_ms = request.fuzz.tolerance_ms;
  f.clock_allowance_ms = c.clock_allowance_ms;
  f.max_lateness_ms = c.max_lateness_ms;
  f.nemesis_every_s = c.nemesis_every_s;
  f.nemesis_etcd = c.nemesis_etcd;
  f.nemesis_slow_ms = c.nemesis_slow_ms;
  f.nemesis_at_leader = c.nemesis_at_leader;
  f.skew_clocks = c.skew_clocks;
  f.clock_beyond_bound = c.clock_beyond_bound;
}

void print_plan(const ClusterFuzzOptions& f) {
  const auto& limits = f.limits;
  std::string nemesis = "no nemesis";
  if (!f.nemesis.empty()) {
    nemesis = "nemesis";
    for (std::size_t i = 0; i < f.nemesis.size(); ++i) nemesis += (i ? "," : " ") + std::string(nemesis_fault_name(f.nemesis[i]));
    nemesis += fmt::format(" every {} s on the nodes{}{}", f.nemesis_every_s, f.nemesis_etcd ? " and etcd members" : "",
                           f.nemesis_at_leader ? " (each at the leader)" : "");
    if (std::find(f.nemesis.begin(), f.nemesis.end(), NemesisFault::slow_etcd) != f.nemesis.end()) {
      nemesis += fmt::format(", slow-etcd adding {} ms each way", f.nemesis_slow_ms);
    }
  }
  fmt::print("fuzz --mode cluster: seed {}, {} clients, {} keys, {} s, {}, leases {}..{} ms, waits {}..{} ms, {}\n",
             f.seed, f.clients, f.keys, f.duration_s,
             f.node_command.empty() ? fmt::format("{} nodes given", f.targets.size())
                                    : fmt::format("{} nodes started on {} etcd members", f.nodes, f.etcd_members),
             f.lease_min_ms, f.lease_max_ms, f.wait_min_ms, f.wait_max_ms, nemesis);
  fmt::print("fuzz: read as a cluster's: clock allowance {} ms{}, maximum lateness {}, tolerance {} ms; limits assumed "
             "(given, the others the protocol's defaults): max_keys {}, max_waiters_per_key {}, max_waiters {}, "
             "max_lease_ms {}, max_wait_ms {}, max_line_bytes {}\n",
             f.clock_allowance_ms,
             f.skew_clocks          ? " (node clocks made wrong within it)"
             : f.clock_beyond_bound ? " (node clocks made wrong ten times beyond it)"
                                    : "",
             f.max_lateness_ms < 0 ? std::string("none (lateness reported)") : fmt::format("{} ms", f.max_lateness_ms),
             f.tolerance_ms, limits.max_keys, limits.max_waiters_per_key, limits.max_waiters, limits.max_lease_ms.value,
             limits.max_wait_ms.value, limits.max_line_bytes);
}

void print_run(const ClusterFuzzRun& run) {
  for (std::size_t i = 0; i < run.node_commands.size(); ++i) fmt::print("node n{}: {}\n", i + 1, run.node_commands[i]);
  if (!run.clocks.empty()) {
    std::string clocks;
    for (const auto& clock : run.clocks) clocks += (clocks.empty() ? "" : "; ") + clock;
    fmt::print("clocks (libfaketime: offset at the start, drift): {}\n", clocks);
  }
  const auto& s = run.clients;
  fmt::print("run: {} requests, {} answered, {} indeterminate; {} attempts, {} redirects, {} reconnections, {} timeouts, "
             "{} connections lost; {} lines that answered no request; {} nemesis steps\n",
             s.requests, s.answered, s.indeterminate, s.attempts, s.redirects, s.reconnects, s.timeouts,
             s.connections_lost, run.unexpected_lines, run.nemesis_steps);
  const auto faults = [](const std::map<std::string, std::uint64_t>& counts) {
    std::string text;
    for (const auto& [name, count] : counts) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", count, name);
    return text.empty() ? std::string("none") : text;
  };
  if (run.nemesis_steps > 0) {
    fmt::print("nemesis: faults on nodes: {}; on etcd members: {}\n", faults(run.faults_on_nodes),
               faults(run.faults_on_etcd));
  }
  // How long the clients went without an answer after each kind of fault.
  for (const auto& line : unavailability_lines(unavailability(run.history, run.faults))) fmt::print("{}\n", line);
  for (const auto& line : resource_lines(run.processes, run.tester)) fmt::print("{}\n", line);
  // As simple mode says it (tests read the line): a machine that did not
  // run the clients for this long did not run the nodes either.
  fmt::print("tester: the fuzzer itself ran at most {:.1f} ms late; the slowest nemesis step took {:.1f} ms\n",
             static_cast<double>(run.tester_stall_us) / 1000.0, static_cast<double>(run.nemesis_slowest_us) / 1000.0);
}

}  // namespace

int run_cluster_fuzz_request(FuzzRequest& request) {
  if (!read_cluster_options(request)) return 2;
  const auto& limits = request.fuzz.limits;
  if (auto error = validate(limits)) {
    fmt::print(stderr, "lockstep fuzz: {}\n", *error);
    return 2;
  }
  auto& f = request.cluster.fuzz;
  f.lease_max_ms = std::min(f.lease_max_ms, limits.max_lease_ms.value);
  f.lease_min_ms = std::min(f.lease_min_ms, f.lease_max_ms);
  f.wait_max_ms = std::min(f.wait_max_ms, limits.max_wait_ms.value);
  if (!read_ranges(request, limits, f.lease_min_ms, f.lease_max_ms, f.wait_min_ms, f.wait_max_ms)) return 2;
  fill_options(request);
  print_plan(f);
  const auto run = run_cluster_fuzz(f);
  print_run(run);
  return finish_fuzz_run(run.history, run.error, request.outputs);
}

}  // namespace lockstep::live
