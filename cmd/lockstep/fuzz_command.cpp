// `lockstep fuzz` and `lockstep check-history`: black-box testing of a live
// server in real time. `fuzz` drives a random workload against it, records
// the history and checks it; `check-history` checks a history recorded by
// any client. Both print the same summary, ending with `violations: N`, and
// exit 0 (conforms), 1 (a violation) or 2 (unknown: the search budget ran
// out, or the run could not be made).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <tuple>
#include <vector>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/limit_options.hpp"
#include "cmd/lockstep/validators.hpp"
#include "impl/decimal.hpp"
#include "live/cluster_fuzz.hpp"
#include "live/fuzz.hpp"
#include "model/history/checker.hpp"
#include "model/history/counterexample.hpp"
#include "report/history_report.hpp"

namespace lockstep::cli {

namespace {

struct Outputs {
  std::string history_path, report_path, junit_path, vectors_dir;
  std::uint64_t budget_states = 20'000'000;
  std::uint64_t budget_memory_mb = 1'024;
  std::string explain_key;
};

void add_output_options(CLI::App& command, Outputs& outputs) {
  command.add_option("--report", outputs.report_path, "write a self-contained HTML report of the run")
      ->check(writable_file());
  command.add_option("--junit", outputs.junit_path, "write JUnit XML: one test case per key and check")
      ->check(writable_file());
  command.add_option("--budget-states", outputs.budget_states, "configurations the checker may step before saying unknown")
      ->check(whole(1))
      ->capture_default_str();
  command.add_option("--budget-memory-mb", outputs.budget_memory_mb,
                     "MiB the configurations of one instant may take before the checker says unknown")
      ->check(whole(16, std::uint64_t{1} << 20))
      ->capture_default_str();
  command.add_option("--vectors", outputs.vectors_dir,
                     "write each key's violation as a conformance vector (.vec) in this folder, for `conform --exec`")
      ->check(writable_folder());
  command.add_option("--explain", outputs.explain_key,
                     "print the explanation found for this key: the instant of each step of the server")
      ->check(protocol_name());
}

// A file name for a key's vector: the key's bytes that are safe in a path.
std::string vector_file_name(std::size_t index, const history::Finding& finding) {
  std::string safe;
  for (const char c : finding.key) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return fmt::format("counterexample-{}-{}.vec", index + 1, safe.substr(0, 60));
}

// Writes the vectors of the key findings; false if a file cannot be written.
// A key's vector runs up to the response nothing explains (or, for an
// answer that never came, to where the shrunk prefix ends).
bool write_vectors(const history::History& recorded, const history::CheckResult& result, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  for (std::size_t i = 0; i < result.violations.size(); ++i) {
    const auto& finding = result.violations[i];
    if (finding.check != "key") continue;
    const auto vector = history::counterexample_vector(recorded, finding.incarnation, finding.key, finding.at_us + 1);
    if (!vector.written) {
      fmt::print("vector: none for key `{}`: {}\n", finding.key, vector.why_not);
      continue;
    }
    const auto path = (std::filesystem::path(dir) / vector_file_name(i, finding)).string();
    std::ofstream out(path, std::ios::binary);
    out << vector.text;
    if (!out) {
      fmt::print(stderr, "cannot write {}\n", path);
      return false;
    }
    fmt::print("vector: {}\n", path);
  }
  return true;
}

// Whether a request of the history names `key` (the second field of `A`
// and `R` lines).
bool history_names_key(const history::History& recorded, const std::string& key) {
  for (const auto& event : recorded.events) {
    if (event.kind != history::EventKind::send || event.line.size() < 2 || event.line[1] != ' ') continue;
    if (event.line.compare(2, key.size(), key) == 0 &&
        (event.line.size() == 2 + key.size() || event.line[2 + key.size()] == ' ')) {
      return true;
    }
  }
  return false;
}

int judge(const history::History& recorded, const Outputs& outputs, const std::string& suite) {
  if (!outputs.explain_key.empty() && !history_names_key(recorded, outputs.explain_key)) {
    fmt::print("explain: no request of the history names key `{}`: nothing to explain (the verdict follows)\n",
               outputs.explain_key);
  }
  history::CheckOptions options;
  options.budget_states = outputs.budget_states;
  options.memory_max_bytes = outputs.budget_memory_mb << 20;
  options.explain_key = outputs.explain_key;
  const auto result = history::check_history(recorded, options);
  for (const auto& line : result.explain_lines) fmt::print("{}\n", line);
  for (const auto& finding : result.violations) {
    fmt::print("\n{}\n", finding.summary);
    for (const auto& line : finding.story) fmt::print("{}\n", line);
  }
  if (!result.violations.empty()) fmt::print("\n");
  for (const auto& line : history::summary_lines(result)) fmt::print("{}\n", line);
  if (!outputs.vectors_dir.empty() && !write_vectors(recorded, result, outputs.vectors_dir)) return 2;
  if (!outputs.report_path.empty()) {
    if (!history::write_html_report(recorded, result, outputs.report_path)) {
      fmt::print(stderr, "cannot write {}\n", outputs.report_path);
      return 2;
    }
    fmt::print("report: {}\n", outputs.report_path);
  }
  if (!outputs.junit_path.empty()) {
    if (!history::write_junit(recorded, result, suite, outputs.junit_path)) {
      fmt::print(stderr, "cannot write {}\n", outputs.junit_path);
      return 2;
    }
    fmt::print("junit: {}\n", outputs.junit_path);
  }
  return history::exit_code(result);
}

// `--mode cluster` (live/cluster_fuzz.hpp): the nodes given or started,
// the nemesis, and how the history is read.
// Either mode's run, once recorded: the history written if asked, then
// judged; a run that could not be completed is `unknown` (exit 2), never a
// pass.
int finish_run(const history::History& recorded, const std::string& error, const Outputs& outputs) {
  if (!outputs.history_path.empty()) {
    std::ofstream out(outputs.history_path);
    history::write_history(out, recorded);
    if (!out) {
      fmt::print(stderr, "cannot write {}\n", outputs.history_path);
      return 2;
    }
    fmt::print("history: {}\n", outputs.history_path);
  }
  if (!error.empty()) {
    fmt::print(stderr, "fuzz: the run could not be completed: {}\n", error);
    fmt::print("violations: unknown\n");
    return 2;
  }
  return judge(recorded, outputs, "lockstep.fuzz");
}

struct ClusterFuzzCommand {
  live::ClusterFuzzOptions fuzz;
  std::string node_command;
  int nodes = 3;
  int etcd_members = 0;
  std::string nemesis;
  double nemesis_every_s = 5;
  bool nemesis_etcd = false;
  std::int64_t clock_allowance_ms = 10;
  std::int64_t max_lateness_ms = -1;
};

struct FuzzCommand {
  live::FuzzOptions fuzz;
  std::string mode = "simple";
  ClusterFuzzCommand cluster;
  std::vector<std::string> given;  // every option given, by its flag
  std::string target;
  std::string lease_range, wait_range;
  // Which limits were given on the command line (the others take the
  // defaults of the mode: the protocol's for --target, the edge-seeking ones
  // for --exec).
  std::vector<std::string> limits_given;
  Outputs outputs;
};

// "A..B" with A <= B, each in [low, high].
std::optional<std::pair<std::int64_t, std::int64_t>> parse_ms_range(const std::string& text, std::int64_t low,
                                                                    std::int64_t high) {
  const auto dots = text.find("..");
  if (dots == std::string::npos) return std::nullopt;
  const auto first = parse_decimal(text.substr(0, dots));
  const auto last = parse_decimal(text.substr(dots + 2));
  if (!first || !last) return std::nullopt;
  const auto a = static_cast<std::int64_t>(std::min<std::uint64_t>(*first, std::uint64_t{1} << 62));
  const auto b = static_cast<std::int64_t>(std::min<std::uint64_t>(*last, std::uint64_t{1} << 62));
  if (a > b || a < low || b > high) return std::nullopt;
  return std::pair{a, b};
}

// The fuzzer's defaults make the edges reachable within seconds: a short
// sweep, few waiters per key, fewer keys allowed than the workload uses.
// They are right only for a target started with them, which --exec does.
// --lease-ms and --wait-ms, in either mode, within the limits settled: each
// range given replaces its bounds; one outside the limits is one line on
// stderr and false.
template <class Ms>
bool read_ranges(const FuzzCommand& options, const Limits& limits, Ms& lease_min, Ms& lease_max, Ms& wait_min,
                 Ms& wait_max) {
  if (!options.lease_range.empty()) {
    const auto range = parse_ms_range(options.lease_range, 1, limits.max_lease_ms.value);
    if (!range) {
      fmt::print(stderr, "fuzz: --lease-ms takes A..B with 1 <= A <= B <= max_lease_ms ({}), not '{}'\n",
                 limits.max_lease_ms.value, options.lease_range);
      return false;
    }
    std::tie(lease_min, lease_max) = *range;
  }
  if (!options.wait_range.empty()) {
    const auto range = parse_ms_range(options.wait_range, 0, limits.max_wait_ms.value);
    if (!range) {
      fmt::print(stderr, "fuzz: --wait-ms takes A..B with 0 <= A <= B <= max_wait_ms ({}), not '{}'\n",
                 limits.max_wait_ms.value, options.wait_range);
      return false;
    }
    std::tie(wait_min, wait_max) = *range;
  }
  return true;
}

Limits edge_limits() {
  Limits limits;
  limits.max_keys = 6;
  limits.max_waiters_per_key = 3;
  limits.max_waiters = 24;
  limits.sweep_ms = DurationMs{1'000};
  limits.max_lease_ms = DurationMs{10'000};
  limits.max_wait_ms = DurationMs{10'000};
  return limits;
}

// Each limit not given takes the mode's default; says where they came from.
std::string settle_limits(FuzzCommand& options) {
  const bool given_any = !options.limits_given.empty();
  const auto given = [&](std::string_view name) {
    return std::find(options.limits_given.begin(), options.limits_given.end(), name) != options.limits_given.end();
  };
  Limits& limits = options.fuzz.limits;
  if (!options.fuzz.command.empty()) {
    const Limits edges = edge_limits();
    if (!given("max_keys")) limits.max_keys = edges.max_keys;
    if (!given("max_waiters_per_key")) limits.max_waiters_per_key = edges.max_waiters_per_key;
    if (!given("max_waiters")) limits.max_waiters = edges.max_waiters;
    if (!given("sweep_ms")) limits.sweep_ms = edges.sweep_ms;
    if (!given("max_lease_ms")) limits.max_lease_ms = edges.max_lease_ms;
    if (!given("max_wait_ms")) limits.max_wait_ms = edges.max_wait_ms;
  }
  if (options.fuzz.clear_of_limits) {
    limits.max_keys = limits.max_waiters_per_key = limits.max_waiters = count_limit_max;
  }
  const std::string unlimited = options.fuzz.clear_of_limits ? "; none on keys and waiters (--no-limits)" : "";
  if (!options.fuzz.command.empty()) {
    return (given_any ? "given, the others the fuzzer's edge-seeking defaults, filled into the command"
                      : "the fuzzer's edge-seeking defaults, filled into the command") + unlimited;
  }
  return (given_any ? "given, the others the protocol's defaults, docs/protocol.md \"Limits\""
                    : "the protocol's defaults, docs/protocol.md \"Limits\": what a server started without options has; if the target was started "
                      "with others, give them (--max-keys, --sweep-ms ...)") + unlimited;
}

bool given(const FuzzCommand& options, std::string_view flag) {
  return std::find(options.given.begin(), options.given.end(), flag) != options.given.end();
}

// `fuzz --mode cluster`: the options of simple mode's workload that mean
// nothing here are refused, the cluster's checked against each other, and
// the run judged as a cluster's.
int run_cluster_fuzz_command(FuzzCommand& options) {
  auto& c = options.cluster;
  auto& f = c.fuzz;
  for (const char* flag : {"--exec", "--restart-every-s", "--strict-syntax", "--no-limits", "--mean-gap-ms",
                           "--sweep-ms"}) {
    if (given(options, flag)) {
      fmt::print(stderr, "fuzz: {} is simple mode's; --mode cluster does not take it\n", flag);
      return 2;
    }
  }
  if (options.target.empty() == c.node_command.empty()) {
    fmt::print(stderr, "fuzz: --mode cluster takes exactly one of --target HOST:PORT,... and --exec-node 'CMD'\n");
    return 2;
  }
  if (!options.target.empty()) {
    for (const char* flag : {"--nodes", "--etcd-members", "--nemesis", "--nemesis-every-s", "--nemesis-etcd"}) {
      if (given(options, flag)) {
        fmt::print(stderr, "fuzz: {} acts on nodes the fuzzer starts (--exec-node); with --target there is nothing to "
                           "start or act on\n",
                   flag);
        return 2;
      }
    }
    std::size_t begin = 0;
    while (begin <= options.target.size()) {
      const auto end = std::min(options.target.find(',', begin), options.target.size());
      const auto item = options.target.substr(begin, end - begin);
      const auto address = client::parse_node_address(item);
      if (!address) {
        fmt::print(stderr, "fuzz: --target {}: a node is an IPv4 address and a port (127.0.0.1:7001)\n", item);
        return 2;
      }
      f.targets.push_back(*address);
      begin = end + 1;
    }
  }
  if (given(options, "--nemesis")) {
    std::string error;
    const auto faults = live::parse_nemesis_faults(c.nemesis, error);
    if (!faults) {
      fmt::print(stderr, "fuzz: --nemesis: {}\n", error);
      return 2;
    }
    f.nemesis = *faults;
  } else if (given(options, "--nemesis-every-s") || given(options, "--nemesis-etcd")) {
    fmt::print(stderr, "fuzz: --nemesis-every-s and --nemesis-etcd need --nemesis kill,pause,restart (or a part)\n");
    return 2;
  }
  if (c.nemesis_etcd && c.etcd_members == 0) {
    fmt::print(stderr, "fuzz: --nemesis-etcd acts on etcd members: give --etcd-members M\n");
    return 2;
  }
  if (!c.node_command.empty() && c.etcd_members == 0 && c.node_command.find("{etcd}") != std::string::npos) {
    fmt::print(stderr, "fuzz: --exec-node names {{etcd}}: give --etcd-members M so that the fuzzer starts them\n");
    return 2;
  }
  if (!f.nemesis.empty() && c.nemesis_every_s > options.fuzz.duration_s) {
    fmt::print(stderr, "fuzz: --nemesis-every-s {} is longer than the run (--duration-s {}): the nemesis would never act\n",
               c.nemesis_every_s, options.fuzz.duration_s);
    return 2;
  }
  if (auto error = validate(options.fuzz.limits)) {
    fmt::print(stderr, "fuzz: {}\n", *error);
    return 2;
  }
  const auto& limits = options.fuzz.limits;
  f.lease_max_ms = std::min(f.lease_max_ms, limits.max_lease_ms.value);
  f.lease_min_ms = std::min(f.lease_min_ms, f.lease_max_ms);
  f.wait_max_ms = std::min(f.wait_max_ms, limits.max_wait_ms.value);
  if (!read_ranges(options, limits, f.lease_min_ms, f.lease_max_ms, f.wait_min_ms, f.wait_max_ms)) return 2;
  f.node_command = c.node_command;
  f.nodes = c.nodes;
  f.etcd_members = c.etcd_members;
  f.limits = limits;
  f.clients = options.fuzz.clients;
  // Fewer keys per client make more hand-offs, and more for the checker to
  // search through a cluster's late Expires: 16 keys unless told.
  f.keys = given(options, "--keys") ? options.fuzz.keys : 16;
  f.duration_s = options.fuzz.duration_s;
  f.seed = options.fuzz.seed;
  f.tolerance_ms = options.fuzz.tolerance_ms;
  f.clock_allowance_ms = c.clock_allowance_ms;
  f.max_lateness_ms = c.max_lateness_ms;
  f.nemesis_every_s = c.nemesis_every_s;
  f.nemesis_etcd = c.nemesis_etcd;
  std::string nemesis = "no nemesis";
  if (!f.nemesis.empty()) {
    nemesis = "nemesis";
    for (std::size_t i = 0; i < f.nemesis.size(); ++i) nemesis += (i ? "," : " ") + std::string(live::nemesis_fault_name(f.nemesis[i]));
    nemesis += fmt::format(" every {} s on the nodes{}", f.nemesis_every_s, f.nemesis_etcd ? " and etcd members" : "");
  }
  fmt::print("fuzz --mode cluster: seed {}, {} clients, {} keys, {} s, {}, leases {}..{} ms, waits {}..{} ms, {}\n",
             f.seed, f.clients, f.keys, f.duration_s,
             f.node_command.empty() ? fmt::format("{} nodes given", f.targets.size())
                                    : fmt::format("{} nodes started on {} etcd members", f.nodes, f.etcd_members),
             f.lease_min_ms, f.lease_max_ms, f.wait_min_ms, f.wait_max_ms, nemesis);
  fmt::print("fuzz: read as a cluster's: clock allowance {} ms, maximum lateness {}, tolerance {} ms; limits assumed "
             "(given, the others the protocol's defaults): max_keys {}, max_waiters_per_key {}, max_waiters {}, "
             "max_lease_ms {}, max_wait_ms {}, max_line_bytes {}\n",
             f.clock_allowance_ms, f.max_lateness_ms < 0 ? std::string("none (lateness reported)") : fmt::format("{} ms", f.max_lateness_ms),
             f.tolerance_ms, limits.max_keys, limits.max_waiters_per_key, limits.max_waiters, limits.max_lease_ms.value,
             limits.max_wait_ms.value, limits.max_line_bytes);
  const auto run = live::run_cluster_fuzz(f);
  for (std::size_t i = 0; i < run.node_commands.size(); ++i) fmt::print("node n{}: {}\n", i + 1, run.node_commands[i]);
  const auto& s = run.clients;
  fmt::print("run: {} requests, {} answered, {} indeterminate; {} attempts, {} redirects, {} reconnections, {} timeouts, "
             "{} connections lost; {} lines that answered no request; {} nemesis steps\n",
             s.requests, s.answered, s.indeterminate, s.attempts, s.redirects, s.reconnects, s.timeouts,
             s.connections_lost, run.unexpected_lines, run.nemesis_steps);
  // As simple mode says it (tests read the line): a machine that did not
  // run the clients for this long did not run the nodes either.
  fmt::print("tester: the fuzzer itself ran at most {:.1f} ms late; the slowest nemesis step took {:.1f} ms\n",
             static_cast<double>(run.tester_stall_us) / 1000.0, static_cast<double>(run.nemesis_slowest_us) / 1000.0);
  return finish_run(run.history, run.error, options.outputs);
}

int run_fuzz_command(FuzzCommand& options) {
  if (options.mode == "cluster") return run_cluster_fuzz_command(options);
  for (const char* flag : {"--exec-node", "--nodes", "--etcd-members", "--nemesis", "--nemesis-every-s", "--nemesis-etcd",
                           "--clock-allowance-ms", "--max-lateness-ms"}) {
    if (given(options, flag)) {
      fmt::print(stderr, "fuzz: {} is cluster mode's: give --mode cluster\n", flag);
      return 2;
    }
  }
  if (options.target.find(',') != std::string::npos) {
    fmt::print(stderr, "fuzz: --target names one server in simple mode; a list of nodes needs --mode cluster\n");
    return 2;
  }
  if (options.target.empty() == options.fuzz.command.empty()) {
    fmt::print(stderr, "fuzz: give exactly one of --target HOST:PORT and --exec 'CMD'\n");
    return 2;
  }
  if (!options.target.empty()) {
    const auto colon = options.target.rfind(':');
    if (colon == std::string::npos) {
      fmt::print(stderr, "fuzz: --target must be HOST:PORT\n");
      return 2;
    }
    options.fuzz.host = options.target.substr(0, colon);
    try {
      options.fuzz.port = static_cast<std::uint16_t>(std::stoul(options.target.substr(colon + 1)));
    } catch (...) {
      fmt::print(stderr, "fuzz: bad port in --target {}\n", options.target);
      return 2;
    }
    if (options.fuzz.restart_every_s > 0) {
      fmt::print(stderr, "fuzz: --restart-every-s needs --exec (the fuzzer must start the target)\n");
      return 2;
    }
  }
  if (options.fuzz.clear_of_limits) {
    for (const char* name : {"max_keys", "max_waiters_per_key", "max_waiters"}) {
      if (std::find(options.limits_given.begin(), options.limits_given.end(), name) != options.limits_given.end()) {
        fmt::print(stderr, "fuzz: --no-limits says the target has no {}; do not give one\n", name);
        return 2;
      }
    }
  }
  const auto limits_source = settle_limits(options);
  if (auto error = validate(options.fuzz.limits)) {
    fmt::print(stderr, "fuzz: {}\n", *error);
    return 2;
  }
  const auto& limits = options.fuzz.limits;
  if (!read_ranges(options, limits, options.fuzz.lease_min_ms, options.fuzz.lease_max_ms, options.fuzz.wait_min_ms,
                   options.fuzz.wait_max_ms)) {
    return 2;
  }
  live::default_ranges(options.fuzz);
  fmt::print("fuzz: seed {}, {} clients, {} keys, {} s, tolerance {} ms, leases {}..{} ms, waits {}..{} ms{}{}\n",
             options.fuzz.seed, options.fuzz.clients, options.fuzz.keys, options.fuzz.duration_s, options.fuzz.tolerance_ms,
             options.fuzz.lease_min_ms, options.fuzz.lease_max_ms, options.fuzz.wait_min_ms, options.fuzz.wait_max_ms,
             options.fuzz.restart_every_s > 0 ? fmt::format(", restart every {} s", options.fuzz.restart_every_s) : "",
             options.fuzz.clear_of_limits ? ", clear of limits" : "");
  fmt::print("fuzz: limits assumed ({}): max_keys {}, max_waiters_per_key {}, max_waiters {}, sweep_ms {}, "
             "max_lease_ms {}, max_wait_ms {}, max_line_bytes {}\n",
             limits_source, limits.max_keys, limits.max_waiters_per_key, limits.max_waiters, limits.sweep_ms.value,
             limits.max_lease_ms.value, limits.max_wait_ms.value, limits.max_line_bytes);
  const auto run = live::run_fuzz(options.fuzz);
  fmt::print("run: {} lines sent, {} received, {} restarts, {} reconnections\n", run.sent, run.received, run.restarts,
             run.reconnects);
  // A target that was not scheduled answers nothing for as long: its late
  // timers then come from the machine, and --tolerance-ms must cover them.
  fmt::print("target: slowest answer to a release {:.1f} ms; the workload waited {} times for a silent target\n",
             static_cast<double>(run.slowest_release_us) / 1000.0, run.held_back);
  // Not scheduled itself, the fuzzer tells of a machine too busy to run
  // it: a target on the same machine waited as long.
  fmt::print("tester: the fuzzer itself ran at most {:.1f} ms late (at +{:.3f} ms); a target on this machine may have "
             "waited as long, and --tolerance-ms {} must cover that\n",
             static_cast<double>(run.tester_stall_us) / 1000.0, static_cast<double>(run.tester_stall_at_us) / 1000.0,
             options.fuzz.tolerance_ms);
  return finish_run(run.history, run.error, options.outputs);
}

}  // namespace

void add_fuzz_commands(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<FuzzCommand>();
  auto* fuzz = app.add_subcommand(
      "fuzz",
      "Black-box fuzzing of a live server in real time: a random concurrent workload from --seed,\n"
      "recorded as a history and checked against the protocol (docs/protocol.md, \"Black box, in\n"
      "real time\"). Exit 0 conforms, 1 a violation, 2 unknown.\n"
      "Fitting it to a service: the limits assumed must be the target's. With --target, those not\n"
      "given are the protocol's defaults (a lockstep serve started without options); with --exec,\n"
      "the fuzzer's edge-seeking defaults (6 keys, 3 waiters per key, 24 waiters, sweep 1000 ms,\n"
      "leases and waits up to 10 s), filled into the command. --lease-ms and --wait-ms keep the\n"
      "workload's leases and waits in a range the service accepts; --no-limits is for a service\n"
      "without limits on keys and waiters (any B is then a violation, and no line past a maximum\n"
      "is sent); --tolerance-ms is how late its timers may fire.\n"
      "--mode cluster fuzzes the nodes of a cluster (--target HOST:PORT,... or --exec-node with\n"
      "--nodes and --etcd-members), with sessions, redirects, retries and a nemesis (README,\n"
      "\"Fuzzing a cluster\").");
  fuzz->add_option("--mode", options->mode,
                   "simple: one server (the default); cluster: the nodes of a cluster, with sessions, redirects and\n"
                   "retries, read by cluster mode's rules (see --exec-node, --nemesis)")
      ->check(one_of({"simple", "cluster"}, "the modes", "simple or cluster"))
      ->capture_default_str();
  fuzz->add_option("--target", options->target,
                   "HOST:PORT of a running server; with --mode cluster, its nodes: HOST:PORT,HOST:PORT,...")
      ->check(host_and_port_list());
  fuzz->add_option("--exec-node", options->cluster.node_command,
                   "--mode cluster: start each node with this shell command: {node} (n1, n2 ...), {port}, {etcd}\n"
                   "(the members --etcd-members started), {prefix} (etcd keys of this run's own), {peers} (every\n"
                   "node's 127.0.0.1:port) and the limits ({max_keys} ...) are filled in");
  fuzz->add_option("--nodes", options->cluster.nodes, "--mode cluster: nodes to start with --exec-node")
      ->check(whole(1, 7))
      ->capture_default_str();
  fuzz->add_option("--etcd-members", options->cluster.etcd_members,
                   "--mode cluster: etcd members to start on loopback for the nodes (their addresses fill {etcd})")
      ->check(whole(1, 7));
  fuzz->add_option("--nemesis", options->cluster.nemesis,
                   "--mode cluster, with --exec-node: faults to inject, comma-separated: kill (SIGKILL, started again\n"
                   "half a period later), pause (SIGSTOP, SIGCONT half a period later), restart (SIGTERM, started at\n"
                   "once); one per period, drawn from --seed, on a node drawn from it or on the leader of the moment");
  fuzz->add_option("--nemesis-every-s", options->cluster.nemesis_every_s, "the nemesis's period")
      ->check(decimal(0.5, 86'400))
      ->capture_default_str();
  fuzz->add_flag("--nemesis-etcd", options->cluster.nemesis_etcd, "the nemesis acts on the etcd members too");
  fuzz->add_option("--clock-allowance-ms", options->cluster.clock_allowance_ms,
                   "--mode cluster: how far apart two node clocks may be (2*S); nodes on one machine share its clock")
      ->check(whole_signed(0, 3'600'000))
      ->capture_default_str();
  fuzz->add_option("--max-lateness-ms", options->cluster.max_lateness_ms,
                   "--mode cluster: fail when an Expire, a Timeout or a caused answer comes this much past its\n"
                   "deadline and the allowance (without it, lateness is only reported)")
      ->check(whole_signed(0, 86'400'000));
  fuzz->add_option("--exec", options->fuzz.command,
                   "start the server with this shell command: {port}, {max_keys}, {max_waiters_per_key},\n"
                   "{max_waiters}, {sweep_ms}, {max_lease_ms}, {max_wait_ms}, {max_line_bytes} and\n"
                   "{state_file} (where it keeps its token mark across restarts) are filled in");
  add_limit_options(*fuzz, options->fuzz.limits);
  fuzz->add_option("--lease-ms", options->lease_range,
                   "A..B: every lease asked is in this range, spread within it (short ones, ones near the sweep\n"
                   "period, the rest log-uniform); default 1..max(400, 1.5 sweeps)")
      ->check(ms_range(1));
  fuzz->add_option("--wait-ms", options->wait_range,
                   "A..B: every wait asked is in this range (0 is a try-lock); default 0..1500")
      ->check(ms_range(0));
  fuzz->add_flag("--no-limits", options->fuzz.clear_of_limits,
                 "the target has no limit on keys and waiters: assume none (any B is a violation), and send no\n"
                 "over-long line and no lease past max_lease_ms");
  fuzz->add_option("--clients", options->fuzz.clients, "connections open at once")
      ->check(whole(1, 1'000))
      ->capture_default_str();
  fuzz->add_option("--keys", options->fuzz.keys, "keys the workload uses")->check(whole(1, 1'000'000))->capture_default_str();
  fuzz->add_option("--duration-s", options->fuzz.duration_s, "how long to fuzz")
      ->check(decimal(1, 86'400))
      ->capture_default_str();
  fuzz->add_option("--seed", options->fuzz.seed, "seed of the workload")->check(whole(0))->capture_default_str();
  fuzz->add_option("--tolerance-ms", options->fuzz.tolerance_ms,
                   "how late an answer caused by time or another request may arrive")
      ->check(whole_signed(0, 60'000))
      ->capture_default_str();
  fuzz->add_option("--restart-every-s", options->fuzz.restart_every_s,
                   "kill and restart the target this often (with --exec): tokens must keep increasing")
      ->check(decimal(0, 86'400))
      ->capture_default_str();
  fuzz->add_option("--mean-gap-ms", options->fuzz.mean_gap_ms,
                   "mean time between one client's requests (0: from --clients)")
      ->check(decimal(0, 60'000))
      ->capture_default_str();
  fuzz->add_flag("--strict-syntax", options->fuzz.strict_syntax,
                 "also send lines only this project's strict wire syntax refuses (two spaces, token 0, an empty line)");
  fuzz->add_option("--history", options->outputs.history_path, "write the recorded history (NDJSON) here")
      ->check(writable_file());
  add_output_options(*fuzz, options->outputs);
  fuzz->callback([options, fuzz, &run] {
    for (const auto* option : fuzz->get_options()) {
      if (option->count() > 0) options->given.push_back(option->get_name());
    }
    for (const auto name : limit_names) {
      std::string flag = "--" + std::string(name);
      std::replace(flag.begin(), flag.end(), '_', '-');
      if (fuzz->get_option(flag)->count() > 0) options->limits_given.emplace_back(name);
    }
    run = [options] { return run_fuzz_command(*options); };
  });

  struct CheckHistory {
    std::string file;
    Outputs outputs;
    // The reading, over the header's: the rules (simple or cluster), and
    // cluster mode's clock allowance and maximum lateness.
    std::string mode;
    std::optional<std::int64_t> clock_allowance_ms, max_lateness_ms;
  };
  auto check = std::make_shared<CheckHistory>();
  auto* command = app.add_subcommand(
      "check-history",
      "Check a recorded history (NDJSON, schema lockstep.history/1, docs/protocol.md) against the\n"
      "protocol; its first line gives the target's limits, the tolerance and the mode (simple or\n"
      "cluster). Exit 0 conforms, 1 a violation, 2 unknown or unreadable.");
  command->add_option("file", check->file, "the history file")->required()->check(readable_file());
  command->add_option("--mode", check->mode,
                      "read the history by simple mode's rules or a cluster's (no sweep, late Expires and Timeouts, "
                      "sessions), whatever its header says")
      ->check(one_of({"simple", "cluster"}, "the modes", "simple or cluster"));
  command->add_option("--clock-allowance-ms", check->clock_allowance_ms,
                      "cluster mode: how far apart two node clocks may be (2*S): an Expire or a Timeout may come that "
                      "much before its deadline")
      ->check(whole_signed(0, 3'600'000));
  command->add_option("--max-lateness-ms", check->max_lateness_ms,
                      "cluster mode: fail when an Expire, a Timeout or a caused answer comes later than this past its "
                      "deadline and the clock allowance (without it, lateness is only reported)")
      ->check(whole_signed(0, 86'400'000));
  add_output_options(*command, check->outputs);
  command->callback([check, &run] {
    run = [check] {
      auto read = history::read_history_file(check->file);
      if (const auto* error = std::get_if<history::ReadError>(&read)) {
        fmt::print(stderr, "check-history: {}:{}: {}\n", check->file, error->line, error->message);
        return 2;
      }
      auto& recorded = std::get<history::History>(read);
      auto& header = recorded.header;
      if (!check->mode.empty()) header.mode = check->mode == "cluster" ? history::Mode::cluster : history::Mode::simple;
      if (header.mode != history::Mode::cluster && (check->clock_allowance_ms || check->max_lateness_ms)) {
        fmt::print(stderr, "check-history: --clock-allowance-ms and --max-lateness-ms read a cluster's history: {} is "
                           "read in simple mode (give --mode cluster)\n",
                   check->file);
        return 2;
      }
      if (header.mode == history::Mode::simple) {
        header.clock_allowance_ms = 0;
        header.max_lateness_ms = -1;
      }
      if (check->clock_allowance_ms) header.clock_allowance_ms = *check->clock_allowance_ms;
      if (check->max_lateness_ms) header.max_lateness_ms = *check->max_lateness_ms;
      return judge(recorded, check->outputs, "lockstep.check-history");
    };
  });
}

}  // namespace lockstep::cli
