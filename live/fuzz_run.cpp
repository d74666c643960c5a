#include "live/fuzz_run.hpp"

#include <string>

#include <fmt/format.h>

#include "live/fuzz_limits.hpp"

namespace lockstep::live {

namespace {

// The options that conflict in simple mode; false after one line on stderr.
bool check_simple_options(const FuzzRequest& request) {
  for (const char* flag : {"--exec-node", "--nodes", "--etcd-members", "--nemesis", "--nemesis-every-s", "--nemesis-etcd",
                           "--nemesis-slow-ms", "--nemesis-at-leader", "--clock-allowance-ms", "--max-lateness-ms",
                           "--skew-clocks", "--clock-beyond-bound"}) {
    if (request.was_given(flag)) {
      fmt::print(stderr, "lockstep fuzz: {} is cluster mode's: give --mode cluster\n", flag);
      return false;
    }
  }
  if (request.target.find(',') != std::string::npos) {
    fmt::print(stderr, "lockstep fuzz: --target names one server in simple mode; a list of nodes needs --mode cluster\n");
    return false;
  }
  if (request.target.empty() == request.fuzz.command.empty()) {
    fmt::print(stderr, "lockstep fuzz: give exactly one of --target HOST:PORT and --exec 'CMD'\n");
    return false;
  }
  return true;
}

// --no-limits with a limit on keys or waiters given; false after one line.
bool check_no_limits(const FuzzRequest& request) {
  if (!request.fuzz.clear_of_limits) return true;
  for (const char* name : {"max_keys", "max_waiters_per_key", "max_waiters"}) {
    if (request.limit_given(name)) {
      fmt::print(stderr, "lockstep fuzz: --no-limits says the target has no {}; do not give one\n", name);
      return false;
    }
  }
  return true;
}

// --target HOST:PORT into the options; false after one line on stderr.
bool read_target(FuzzRequest& request) {
  const auto colon = request.target.rfind(':');
  if (colon == std::string::npos) {
    fmt::print(stderr, "lockstep fuzz: --target must be HOST:PORT\n");
    return false;
  }
  request.fuzz.host = request.target.substr(0, colon);
  try {
    request.fuzz.port = static_cast<std::uint16_t>(std::stoul(request.target.substr(colon + 1)));
  } catch (...) {
    fmt::print(stderr, "lockstep fuzz: bad port in --target {}\n", request.target);
    return false;
  }
  if (request.fuzz.restart_every_s > 0) {
    fmt::print(stderr, "lockstep fuzz: --restart-every-s needs --exec (the fuzzer must start the target)\n");
    return false;
  }
  return true;
}

void print_plan(const FuzzOptions& f, const std::string& limits_source) {
  const auto& limits = f.limits;
  fmt::print("fuzz: seed {}, {} clients, {} keys, {} s, tolerance {} ms, leases {}..{} ms, waits {}..{} ms{}{}\n",
             f.seed, f.clients, f.keys, f.duration_s, f.tolerance_ms, f.lease_min_ms, f.lease_max_ms, f.wait_min_ms,
             f.wait_max_ms, f.restart_every_s > 0 ? fmt::format(", restart every {} s", f.restart_every_s) : "",
             f.clear_of_limits ? ", clear of limits" : "");
  fmt::print("fuzz: limits assumed ({}): max_keys {}, max_waiters_per_key {}, max_waiters {}, sweep_ms {}, "
             "max_lease_ms {}, max_wait_ms {}, max_line_bytes {}\n",
             limits_source, limits.max_keys, limits.max_waiters_per_key, limits.max_waiters, limits.sweep_ms.value,
             limits.max_lease_ms.value, limits.max_wait_ms.value, limits.max_line_bytes);
}

void print_run(const FuzzRun& run, std::int64_t tolerance_ms) {
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
             tolerance_ms);
  for (const auto& line : resource_lines(run.processes, run.tester)) fmt::print("{}\n", line);
}

}  // namespace

int run_fuzz_request(FuzzRequest& request) {
  if (!check_simple_options(request)) return 2;
  if (!request.target.empty() && !read_target(request)) return 2;
  if (!check_no_limits(request)) return 2;
  const auto limits_source = settle_limits(request);
  auto& f = request.fuzz;
  if (auto error = validate(f.limits)) {
    fmt::print(stderr, "lockstep fuzz: {}\n", *error);
    return 2;
  }
  if (!read_ranges(request, f.limits, f.lease_min_ms, f.lease_max_ms, f.wait_min_ms, f.wait_max_ms)) return 2;
  default_ranges(f);
  const auto run = run_fuzz(f, [&] { print_plan(f, limits_source); });
  if (!run.started) {
    // Nothing was sent: the reason comes first and alone, not after a
    // run's statistics.
    fmt::print(stderr, "fuzz: {}\n", run.error);
    if (!run.target_output.empty()) fmt::print("the target's output:\n{}\n", run.target_output);
    return 2;
  }
  print_run(run, f.tolerance_ms);
  return finish_fuzz_run(run.history, run.error, request.outputs);
}

}  // namespace lockstep::live
