// `lockstep fuzz` and `lockstep check-history`: black-box testing of a live
// server in real time. `fuzz` drives a random workload against it, records
// the history and checks it; `check-history` checks a history recorded by
// any client. Both print the same summary, ending with `violations: N`, and
// exit 0 (conforms), 1 (a violation) or 2 (unknown: the search budget ran
// out, or the run could not be made).
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/limit_options.hpp"
#include "cmd/lockstep/validators.hpp"
#include "live/fuzz.hpp"
#include "model/history/checker.hpp"
#include "model/history/counterexample.hpp"
#include "model/history/report.hpp"

namespace lockstep::cli {

namespace {

struct Outputs {
  std::string history_path, report_path, junit_path, vectors_dir;
  std::uint64_t budget_states = 20'000'000;
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

struct FuzzCommand {
  live::FuzzOptions fuzz;
  std::string target;
  Outputs outputs;
};

int run_fuzz_command(FuzzCommand& options) {
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
  if (auto error = validate(options.fuzz.limits)) {
    fmt::print(stderr, "fuzz: {}\n", *error);
    return 2;
  }
  if (options.fuzz.clients == 0 || options.fuzz.keys == 0 || options.fuzz.clients > 1000) {
    fmt::print(stderr, "fuzz: --clients must be 1 to 1000 and --keys at least 1\n");
    return 2;
  }
  fmt::print("fuzz: seed {}, {} clients, {} keys, {} s, tolerance {} ms{}\n", options.fuzz.seed, options.fuzz.clients,
             options.fuzz.keys, options.fuzz.duration_s, options.fuzz.tolerance_ms,
             options.fuzz.restart_every_s > 0 ? fmt::format(", restart every {} s", options.fuzz.restart_every_s) : "");
  const auto run = live::run_fuzz(options.fuzz);
  fmt::print("run: {} lines sent, {} received, {} restarts, {} reconnections\n", run.sent, run.received, run.restarts,
             run.reconnects);
  if (!options.outputs.history_path.empty()) {
    std::ofstream out(options.outputs.history_path);
    history::write_history(out, run.history);
    if (!out) {
      fmt::print(stderr, "cannot write {}\n", options.outputs.history_path);
      return 2;
    }
    fmt::print("history: {}\n", options.outputs.history_path);
  }
  if (!run.error.empty()) {
    fmt::print(stderr, "fuzz: the run could not be completed: {}\n", run.error);
    fmt::print("violations: unknown\n");
    return 2;
  }
  return judge(run.history, options.outputs, "lockstep.fuzz");
}

// The fuzzer's defaults make the edges reachable within seconds: a short
// sweep, few waiters per key, fewer keys allowed than the workload uses.
Limits fuzz_limits() {
  Limits limits;
  limits.max_keys = 6;
  limits.max_waiters_per_key = 3;
  limits.max_waiters = 24;
  limits.sweep_ms = DurationMs{1'000};
  limits.max_lease_ms = DurationMs{10'000};
  limits.max_wait_ms = DurationMs{10'000};
  return limits;
}

}  // namespace

void add_fuzz_commands(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<FuzzCommand>();
  options->fuzz.limits = fuzz_limits();
  auto* fuzz = app.add_subcommand(
      "fuzz",
      "Black-box fuzzing of a live server in real time: a random concurrent workload from --seed,\n"
      "recorded as a history and checked against the protocol (docs/protocol.md, \"Black box, in\n"
      "real time\"). The limits given must be the target's; with --exec they are passed to it. Exit 0\n"
      "conforms, 1 a violation, 2 unknown.");
  fuzz->add_option("--target", options->target, "HOST:PORT of a running server")->check(host_and_port());
  fuzz->add_option("--exec", options->fuzz.command,
                   "start the server with this shell command: {port}, {max_keys}, {max_waiters_per_key},\n"
                   "{max_waiters}, {sweep_ms}, {max_lease_ms}, {max_wait_ms}, {max_line_bytes} and\n"
                   "{state_file} (where it keeps its token mark across restarts) are filled in");
  add_limit_options(*fuzz, options->fuzz.limits);
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
  fuzz->callback([options, &run] { run = [options] { return run_fuzz_command(*options); }; });

  auto check = std::make_shared<std::pair<std::string, Outputs>>();
  auto* command = app.add_subcommand(
      "check-history",
      "Check a recorded history (NDJSON, schema lockstep.history/1, docs/protocol.md) against the\n"
      "protocol; its first line gives the target's limits and the tolerance. Exit 0 conforms,\n"
      "1 a violation, 2 unknown or unreadable.");
  command->add_option("file", check->first, "the history file")->required()->check(readable_file());
  add_output_options(*command, check->second);
  command->callback([check, &run] {
    run = [check] {
      auto read = history::read_history_file(check->first);
      if (const auto* error = std::get_if<history::ReadError>(&read)) {
        fmt::print(stderr, "check-history: {}:{}: {}\n", check->first, error->line, error->message);
        return 2;
      }
      return judge(std::get<history::History>(read), check->second, "lockstep.check-history");
    };
  });
}

}  // namespace lockstep::cli
