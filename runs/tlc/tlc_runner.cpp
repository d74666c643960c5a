#include "runs/tlc/tlc_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "runs/tlc/embedded_spec.hpp"
#include "live/process.hpp"

namespace lockstep::tlc {

namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Runs argv in `dir` with stdout and stderr into `log`; returns the exit
// status, or -1 if it could not run, and adds the child's CPU time to
// `cpu_seconds`.
int run_in(const std::string& dir, const std::vector<std::string>& argv, const std::string& log, double& cpu_seconds) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    // Its own group, stopped by the tool's signal handler before the work
    // folder is removed; and told by the kernel if the tool dies otherwise.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the tool died before prctl
    if (chdir(dir.c_str()) != 0) _exit(126);
    live::redirect_child_to_log(log);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  live::stop_on_signal(pid);
  int status = 0;
  struct rusage usage {};
  int waited = 0;
  while ((waited = wait4(pid, &status, 0, &usage)) < 0 && errno == EINTR) {
  }
  live::forget_on_signal(pid);
  if (waited < 0) return -1;
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  cpu_seconds += seconds(usage.ru_utime) + seconds(usage.ru_stime);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first TLC line that starts with "Error:", and the few lines after it.
std::string tlc_error(const std::string& log) {
  const auto at = log.find("Error:");
  if (at == std::string::npos) return {};
  std::istringstream lines(log.substr(at));
  std::string line, text;
  for (int n = 0; n < 6 && std::getline(lines, line); ++n) text += (text.empty() ? "" : " ") + line;
  return text;
}

}  // namespace

JarLookup find_tla2tools_jar() {
  const char* env = std::getenv("TLA2TOOLS_JAR");
  if (env == nullptr || *env == '\0') {
    return {std::nullopt, "TLA2TOOLS_JAR is not set: set it to the path of a tla2tools.jar (TLC 1.7 or later)"};
  }
  struct stat info {};
  if (stat(env, &info) != 0 || !S_ISREG(info.st_mode)) {
    return {std::nullopt, fmt::format("TLA2TOOLS_JAR={} is not a file", env)};
  }
  return {std::string(env), {}};
}

void write_tla_files(const sim::TlaTrace& trace, const std::string& work_dir) {
  if (trace.mode == sim::TraceMode::cluster) {
    write_file(work_dir + "/LockCluster.tla", lock_cluster_tla);
    write_file(work_dir + "/TraceLockCluster.tla", trace_lock_cluster_tla);
  } else {
    write_file(work_dir + "/LockServer.tla", lock_server_tla);
    write_file(work_dir + "/TraceLockServer.tla", trace_lock_server_tla);
  }
  write_file(work_dir + "/" + trace.module_name + ".tla", trace.module_text);
  write_file(work_dir + "/" + trace.module_name + ".cfg", trace.config_text);
  write_file(work_dir + "/" + trace.module_name + "Locate.cfg", sim::locate_config(trace));
}

// The decimal number just after the first `marker` at or after `from`.
// (No std::regex: plain scans of TLC's log are enough, and GCC 12 warns
// falsely inside <regex> under the sanitizers.)
static std::optional<std::uint64_t> number_after(const std::string& text, std::string_view marker, std::size_t from = 0) {
  const auto at = text.find(marker, from);
  if (at == std::string::npos) return std::nullopt;
  std::size_t i = at + marker.size();
  std::uint64_t value = 0;
  bool any = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && value < (std::uint64_t{1} << 60); ++i) {
    value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
    any = true;
  }
  return any ? std::optional{value} : std::nullopt;
}

namespace {

// One validation of a trace: TLC run on it in `work_dir` (a second time to
// locate the event, when the first pass ends early) and its output judged.
class TraceValidation {
 public:
  TraceValidation(const sim::TlaTrace& trace, const std::string& jar, const std::string& work_dir)
      : trace_(trace), jar_(jar), work_dir_(work_dir) {}

  TraceVerdict run() {
    write_tla_files(trace_, work_dir_);
    run_passes();
    judge();
    return verdict_;
  }

 private:
  // The first pass has no Stuck action and does not check deadlock; only a
  // path that ends early is run again to name the event (TraceLocateNext).
  void run_passes() {
    log_ = work_dir_ + "/tlc.log";
    const auto started = std::chrono::steady_clock::now();
    status_ = run_tlc(trace_.module_name + ".cfg");
    output_ = read_file(log_);
    ended_early_ = status_ == 0 && output_.find("<<\"trace-done\", ") == std::string::npos &&
                   output_.find("No error has been found") != std::string::npos;
    if (ended_early_) {
      log_ = work_dir_ + "/tlc-locate.log";
      status_ = run_tlc(trace_.module_name + "Locate.cfg");
      output_ = read_file(log_);
    }
    verdict_.tlc_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (const auto n = number_after(output_, "states generated, ")) verdict_.tlc_states = *n;
  }

  // TLC on the trace module with `config`, its output into log_.
  int run_tlc(const std::string& config) {
    // One worker: the trace spec has one path, so more workers only contend.
    // The serial collector: one TLC worker walks one path, and parallel
    // collection threads cost a loaded 2-core machine more than they save.
    // TLC copies the standard modules into java.io.tmpdir: a directory of
    // its own, so that TLC runs at the same time do not read each other's
    // half-written copies.
    const std::vector<std::string> argv{"java", "-XX:+UseSerialGC", "-Xss64m", "-Djava.io.tmpdir=" + work_dir_,
                                        "-cp", jar_, "tlc2.TLC",
                                        "-nowarning", "-workers", "1", "-deadlock", "-metadir", work_dir_ + "/states",
                                        "-config", config, trace_.module_name + ".tla"};
    return run_in(work_dir_, argv, log_, verdict_.tlc_cpu_seconds);
  }

  void judge() {
    const auto stuck = output_.find("<<\"trace-stuck\", ");
    const auto done = output_.find("<<\"trace-done\", ");
    if (status_ == 127 || status_ < 0) {
      verdict_.message = fmt::format("could not run java (status {}); is a JDK on PATH?", status_);
    } else if (ended_early_ && status_ == 0 && done == std::string::npos && stuck == std::string::npos &&
               output_.find("No error has been found") != std::string::npos) {
      judge_unexplained();
    } else if (stuck != std::string::npos) {
      judge_stuck(stuck);
    } else if (output_.find("Invariant TraceInvariant is violated") != std::string::npos) {
      judge_invariant();
    } else if (status_ == 0 && done != std::string::npos) {
      judge_done(done);
    } else {
      const auto error = tlc_error(output_);
      verdict_.message = fmt::format("TLC exited with status {}{}{} (log: {})", status_, error.empty() ? "" : ": ",
                                     error, log_);
    }
  }

  // The locating pass ended short of the trace's end without naming the
  // event it stuck at.
  void judge_unexplained() {
    // The cluster trace spec's locating pass prints each event it explains.
    constexpr std::string_view explained_marker = "<<\"trace-explained\", ";
    const auto last_explained = output_.rfind(explained_marker);
    // <<"trace-explained", event, time>>: the event after the last one.
    const auto event = last_explained == std::string::npos ? std::optional<std::uint64_t>{0}
                                                           : number_after(output_, explained_marker, last_explained);
    const auto comma = last_explained == std::string::npos
                           ? std::string::npos
                           : output_.find(", ", last_explained + explained_marker.size());
    const auto time = comma == std::string::npos ? std::nullopt : number_after(output_, ", ", comma);
    verdict_.kind = TraceVerdict::Kind::invalid;
    verdict_.event = event.value_or(0) + 1;
    verdict_.message = fmt::format("no step of the spec explains it (spec {} at {} ms)", clock_name(),
                                   time ? std::to_string(*time) : "?");
  }

  void judge_stuck(std::size_t stuck) {
    // <<"trace-stuck", event, clock>>
    constexpr std::string_view marker = "<<\"trace-stuck\", ";
    const auto event = number_after(output_, marker, stuck);
    const auto comma = output_.find(", ", stuck + marker.size());
    const auto clock = comma == std::string::npos ? std::nullopt : number_after(output_, ", ", comma);
    verdict_.kind = TraceVerdict::Kind::invalid;
    verdict_.event = event.value_or(0);
    verdict_.message = fmt::format("no step of the spec explains it (spec {} at {} ms)", clock_name(),
                                   clock ? std::to_string(*clock) : "?");
  }

  void judge_invariant() {
    // The error trace's last state says how many events it had explained.
    const auto last_index = output_.rfind("/\\ i = ");
    const auto last = last_index == std::string::npos ? std::nullopt : number_after(output_, "/\\ i = ", last_index);
    verdict_.kind = TraceVerdict::Kind::invalid;
    verdict_.event = std::max<std::uint64_t>(last.value_or(0), 1);
    verdict_.message = fmt::format("a state invariant of {} (TraceInvariant) is violated after it",
                                   trace_.mode == sim::TraceMode::cluster ? "LockCluster" : "LockServer");
  }

  void judge_done(std::size_t done) {
    const auto explained = number_after(output_, "<<\"trace-done\", ", done).value_or(0);
    if (explained == trace_.steps.size()) {
      verdict_.kind = TraceVerdict::Kind::valid;
    } else {
      verdict_.message = fmt::format("TLC explained {} events of {}", explained, trace_.steps.size());
    }
  }

  // What the trace spec of the mode calls its clock.
  const char* clock_name() const { return trace_.mode == sim::TraceMode::cluster ? "time" : "clock"; }

  const sim::TlaTrace& trace_;
  const std::string& jar_;
  const std::string& work_dir_;
  TraceVerdict verdict_;
  std::string log_;  // the last pass's
  int status_ = 0;
  std::string output_;
  bool ended_early_ = false;
};

}  // namespace

TraceVerdict validate_trace(const sim::TlaTrace& trace, const std::string& jar, const std::string& work_dir) {
  return TraceValidation(trace, jar, work_dir).run();
}

std::string format_verdict(const sim::TlaTrace& trace, const TraceVerdict& verdict) {
  switch (verdict.kind) {
    case TraceVerdict::Kind::valid:
      return fmt::format("trace: valid ({} events, {} states, TLC {:.1f} s, CPU {:.1f} s)\n", trace.steps.size(),
                         verdict.tlc_states, verdict.tlc_seconds, verdict.tlc_cpu_seconds);
    case TraceVerdict::Kind::invalid: {
      std::string text = fmt::format("trace: invalid at event {}: {}\n", verdict.event, verdict.message);
      if (verdict.event >= 1 && verdict.event <= trace.steps.size()) {
        const auto& step = trace.steps[verdict.event - 1];
        text += fmt::format("  event {} (trace line {}, t={} ms): {}\n", verdict.event, step.line, step.t, step.summary);
        if (verdict.event >= 2) {
          const auto& before = trace.steps[verdict.event - 2];
          text += fmt::format("  after event {} (trace line {}, t={} ms): {}\n", verdict.event - 1, before.line,
                              before.t, before.summary);
        }
      }
      return text;
    }
    case TraceVerdict::Kind::error:
      break;
  }
  return fmt::format("trace: not validated: {}\n", verdict.message);
}

std::string format_coverage(sim::TraceMode mode, const sim::TraceCoverage& coverage) {
  std::string text = fmt::format("coverage of the spec's actions ({} mode, steps):\n", sim::trace_mode_name(mode));
  for (const auto& name : sim::coverage_actions(mode)) {
    const auto it = coverage.actions.find(name);
    text += fmt::format("  {:<42}{:>10}\n", name, it == coverage.actions.end() ? 0 : it->second);
  }
  text += "responses:";
  for (const auto& name : sim::coverage_responses(mode)) {
    const auto it = coverage.responses.find(name);
    text += fmt::format(" {} {}", name, it == coverage.responses.end() ? 0 : it->second);
  }
  return text + "\n";
}

std::string missing_coverage(sim::TraceMode mode, const sim::TraceCoverage& coverage) {
  std::string missing;
  for (const auto& name : sim::coverage_actions(mode)) {
    if (coverage.actions.count(name) == 0) missing += (missing.empty() ? "" : ", ") + name;
  }
  for (const auto& name : sim::coverage_responses(mode)) {
    if (coverage.responses.count(name) == 0) missing += (missing.empty() ? "" : ", ") + std::string("response ") + name;
  }
  return missing;
}

std::string make_work_dir() {
  std::string path = live::temporary_base() + "/lockstep-trace-XXXXXX";
  std::vector<char> buffer(path.begin(), path.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("cannot create a directory under " + path);
  return std::string(buffer.data());
}

std::optional<sim::TlaTrace> read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fmt::print(stderr, "cannot read {}\n", path);
    return std::nullopt;
  }
  try {
    return sim::trace_to_tla(in, "TraceRun", sim::TraceSpecs{trace_lock_server_tla, trace_lock_cluster_tla});
  } catch (const sim::TraceFormatError& e) {
    fmt::print(stderr, "{}: {}\n", path, e.what());
    return std::nullopt;
  } catch (const std::exception& e) {  // a field of an unexpected JSON type
    fmt::print(stderr, "{}: not a trace this version reads: {}\n", path, e.what());
    return std::nullopt;
  }
}

TraceVerdict validate_in_fresh_dir(const sim::TlaTrace& trace, const std::string& jar, const std::string& keep_dir) {
  if (!keep_dir.empty()) {
    std::filesystem::create_directories(keep_dir);
    return validate_trace(trace, jar, keep_dir);
  }
  const auto work = live::TemporaryFolder::create("lockstep-trace");
  if (!work) throw std::runtime_error("cannot create a temporary directory for TLC's work");
  return validate_trace(trace, jar, work->path());
}

TraceVerdict::Kind validate_run_trace(const std::string& trace_path, const std::string& jar, std::uint64_t violations,
                                      std::optional<std::int64_t> first_violation_ms) {
  const auto trace = read_trace_file(trace_path);
  if (!trace) return TraceVerdict::Kind::error;
  const auto verdict = validate_in_fresh_dir(*trace, jar, "");
  fmt::print("{}", format_verdict(*trace, verdict));
  const bool sim_failed = violations > 0;
  const std::string sim_side = first_violation_ms
                                   ? fmt::format("the simulator's first violation is at {} ms", *first_violation_ms)
                                   : std::string("the simulator saw no violation");
  switch (verdict.kind) {
    case TraceVerdict::Kind::valid:
      fmt::print("verdicts: {}; {}\n", sim_failed ? "differ" : "agree", sim_side);
      break;
    case TraceVerdict::Kind::invalid: {
      const auto t = verdict.event >= 1 && verdict.event <= trace->steps.size() ? trace->steps[verdict.event - 1].t : -1;
      fmt::print("verdicts: {}; the spec first fails at {} ms, {}\n", sim_failed ? "agree" : "differ", t, sim_side);
      break;
    }
    case TraceVerdict::Kind::error:
      break;
  }
  return verdict.kind;
}

int validate_traces(const std::vector<std::string>& traces, const std::string& jar, const std::string& keep_dir,
                    bool require_coverage) {
  std::map<sim::TraceMode, sim::TraceCoverage> coverage;  // of the valid traces, per mode
  std::uint64_t valid = 0, invalid = 0, errors = 0;
  double seconds_max = 0, cpu_seconds_max = 0;
  for (const auto& path : traces) {
    const auto trace = read_trace_file(path);
    if (!trace) {
      ++errors;
      continue;
    }
    const auto verdict = validate_in_fresh_dir(*trace, jar, keep_dir);
    fmt::print("{}: {}", path, format_verdict(*trace, verdict));
    seconds_max = std::max(seconds_max, verdict.tlc_seconds);
    cpu_seconds_max = std::max(cpu_seconds_max, verdict.tlc_cpu_seconds);
    if (verdict.kind == TraceVerdict::Kind::valid) {
      ++valid;
      coverage[trace->mode].merge(trace->coverage);
    } else if (verdict.kind == TraceVerdict::Kind::invalid) {
      ++invalid;
    } else {
      ++errors;
    }
  }
  std::string missing;
  for (const auto& [mode, covered] : coverage) {
    fmt::print("{}", format_coverage(mode, covered));
    const auto lacking = missing_coverage(mode, covered);
    if (!lacking.empty()) {
      fmt::print("not covered by the valid {} traces: {}\n", sim::trace_mode_name(mode), lacking);
      missing += lacking;
    }
  }
  if (coverage.empty()) missing = "no valid trace";
  fmt::print("traces: {} valid, {} invalid, {} not validated; slowest TLC run {:.1f} s (CPU {:.1f} s)\n", valid,
             invalid, errors, seconds_max, cpu_seconds_max);
  if (errors > 0) return 2;
  if (invalid > 0) return 1;
  if (require_coverage && !missing.empty()) return 1;
  return 0;
}

}  // namespace lockstep::tlc
