// What the processes of a live run cost: the peak resident memory and the
// open file descriptors of each server, node or etcd member the fuzzer
// started (under a name: `n1`, `etcd2`, `server`; a restart is a new run of
// the same name; the process group its command runs in, so a shell that did
// not exec its server counts with it) and of the fuzzer itself, read from
// Linux's /proc. A
// long run (the soak) reads from them whether memory grows without bound:
// each name's largest resident set in the second minute of the run,
// against its largest in the last minute (a node restarted meanwhile
// rebuilds its replicated state, so a table that never stops growing shows
// across restarts too).
//
// Single-threaded: the run calls sample() from its loop (it reads at most
// once a second) and stopping() before it stops or kills a process, so
// that process's last figures are read while it still exists.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::live {

struct ProcessFigures {
  std::string name;
  int runs = 0;                    // processes that ran under the name
  std::int64_t peak_rss_kb = 0;    // the largest resident set any of them had (VmHWM)
  std::int64_t peak_fds = 0;       // the most descriptors open at one sample
  // Largest resident set in the second minute of the run and in its last
  // minute: known for runs of three minutes or more.
  std::optional<std::int64_t> second_minute_kb, last_minute_kb;
  std::optional<double> growth() const;  // last over second minute
};

class ResourceWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // `now` is the run's clock (tests give their own).
  explicit ResourceWatch(std::chrono::seconds run_length, std::chrono::milliseconds period = std::chrono::seconds(1),
                         std::function<Clock::time_point()> now = Clock::now);

  // A process started under `name`.
  void started(const std::string& name, pid_t pid);
  // Reads every process watched and this one, unless the last reading is
  // less than a period old (`now`: read at once).
  void sample(bool now = false);
  // Reads the process one last time and stops watching it: call before it
  // is stopped or killed (its /proc entry goes once it is reaped).
  void stopping(pid_t pid);

  std::vector<ProcessFigures> processes() const;  // by name
  ProcessFigures tester() const;                  // this process

 private:
  struct Reading {
    std::int64_t rss_kb = 0, hwm_kb = 0, fds = 0;
  };
  void read(const std::string& name, pid_t pid, std::chrono::microseconds at);
  void note(ProcessFigures& figures, const Reading& reading, std::chrono::microseconds at);

  std::function<Clock::time_point()> now_;
  Clock::time_point start_;
  std::chrono::seconds run_length_;
  std::chrono::milliseconds period_;
  std::optional<Clock::time_point> last_sample_;
  std::map<pid_t, std::string> watched_;
  std::map<std::string, ProcessFigures> figures_;
  ProcessFigures self_;
};

// The summary's lines, `resources: ...`, one for the tester and one per name.
std::vector<std::string> resource_lines(const std::vector<ProcessFigures>& processes, const ProcessFigures& tester);

}  // namespace lockstep::live
