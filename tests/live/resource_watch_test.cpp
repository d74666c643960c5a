// live/resource_watch on processes the test starts, with a clock of the
// test's own for the run's minutes: a command that did not exec its program
// (a shell and its child) counts as its whole process group; its peak
// resident memory and open descriptors are read, and read once more when it
// is about to stop; a process that takes 64 MB more after the second minute
// shows its last minute at more than twice its second (what fails a soak),
// one that takes nothing at about once; a run shorter than three minutes
// states no growth; the tester's own figures are read too.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "live/process.hpp"
#include "live/resource_watch.hpp"

namespace lockstep::live {
namespace {

using namespace std::chrono_literals;
using Clock = ResourceWatch::Clock;

// A python program that allocates 64 MB (touched, so resident) on SIGUSR1.
const std::string grower =
    "python3 -c 'import signal, time\n"
    "data = []\n"
    "signal.signal(signal.SIGUSR1, lambda *a: data.append(b\"x\" * (64 << 20)))\n"
    "print(\"ready\", flush=True)\n"
    "while True: time.sleep(0.05)'";

// Waits until the process printed `ready` (its handler is in place).
bool ready(const ServerProcess& process) {
  for (int i = 0; i < 300; ++i) {
    if (process.log_tail().find("ready") != std::string::npos) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

std::int64_t rss_kb_of_group(ResourceWatch& watch, const std::string& name) {
  for (const auto& p : watch.processes()) {
    if (p.name == name) return p.peak_rss_kb;
  }
  return 0;
}

TEST(ResourceWatch, MemoryGrowthAfterTheFirstMinuteIsMeasured) {
  // The grower exec'd (the signal goes to its group), the steady one not:
  // a shell and its python child, counted together.
  const auto log = [](const char* name) { return fmt::format("/tmp/lockstep-resource-watch-{}-{}.log", getpid(), name); };
  auto grows = ServerProcess::start("exec " + grower, log("grows"));
  auto steady = ServerProcess::start(grower, log("steady"));
  ASSERT_TRUE(grows && steady);
  ASSERT_TRUE(ready(*grows) && ready(*steady));
  auto fake = Clock::now();
  ResourceWatch watch(300s, 1s, [&] { return fake; });
  watch.started("grows", grows->pid());
  watch.started("steady", steady->pid());
  // The second minute of the run.
  fake += 70s;
  watch.sample(true);
  const auto before_kb = rss_kb_of_group(watch, "grows");
  EXPECT_GT(before_kb, 1'000);
  grows->send_signal(SIGUSR1);
  // Past the second minute, until the allocation is resident; then the last
  // minute.
  fake += 60s;
  for (int i = 0; i < 100 && rss_kb_of_group(watch, "grows") < before_kb + 60'000; ++i) {
    std::this_thread::sleep_for(100ms);
    watch.sample(true);
  }
  fake += 160s;
  watch.sample(true);
  watch.stopping(grows->pid());
  watch.stopping(steady->pid());
  grows->stop();
  steady->stop();
  std::remove(log("grows").c_str());
  std::remove(log("steady").c_str());
  for (const auto& p : watch.processes()) {
    ASSERT_TRUE(p.growth()) << p.name;
    EXPECT_EQ(p.runs, 1);
    // The standard three of each process of the group, at least.
    EXPECT_GE(p.peak_fds, p.name == "steady" ? 6 : 3) << p.name;
    if (p.name == "grows") {
      EXPECT_GT(*p.growth(), 2.0) << *p.second_minute_kb << " kB, then " << *p.last_minute_kb << " kB";
      EXPECT_GE(p.peak_rss_kb, before_kb + 60'000);
    } else {
      EXPECT_LT(*p.growth(), 1.3) << *p.second_minute_kb << " kB, then " << *p.last_minute_kb << " kB";
    }
  }
  const auto lines = resource_lines(watch.processes(), watch.tester());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[0].starts_with("resources: fuzzer peak ")) << lines[0];
  EXPECT_NE(lines[1].find("resources: grows peak "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(" in the second minute, "), std::string::npos) << lines[1];
  EXPECT_GT(watch.tester().peak_rss_kb, 0);
}

TEST(ResourceWatch, AShortRunStatesNoGrowthAndCountsRuns) {
  auto fake = Clock::now();
  ResourceWatch watch(60s, 1s, [&] { return fake; });
  for (int run = 0; run < 2; ++run) {
    auto process = ServerProcess::start("exec sleep 30", "/dev/null");
    ASSERT_TRUE(process);
    watch.started("server", process->pid());
    std::this_thread::sleep_for(200ms);
    fake += 20s;
    watch.sample();
    watch.stopping(process->pid());
    process->stop();
  }
  const auto processes = watch.processes();
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].runs, 2);
  EXPECT_GT(processes[0].peak_rss_kb, 0);
  EXPECT_FALSE(processes[0].growth());
  EXPECT_EQ(resource_lines(processes, watch.tester())[1].find("second minute"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::live
