// How the tools stop a server they started (live/process.hpp): SIGTERM to
// its process group, and done only when every process of the group has
// exited. The command is run by /bin/sh without `exec`, so the shell is the
// group's leader and exits at once on SIGTERM, while the server, its child,
// takes 300 ms to exit after its own SIGTERM: stop() must wait for the
// child, not return when the shell has gone.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "live/process.hpp"

namespace lockstep::testing {
namespace {

using namespace std::chrono_literals;

// Whether `pid` is a process that has not exited (a zombie has exited).
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z' && text[close + 2] != 'X';
}

TEST(ServerProcess, StopWaitsForEveryProcessOfTheGroup) {
  const auto dir = live::TemporaryFolder::create("lockstep-process-test");
  ASSERT_TRUE(dir.has_value());
  const auto pid_file = dir->path() + "/child.pid";
  // The child writes its pid, then runs until SIGTERM, which it answers by
  // exiting 300 ms later; `; exit $?` keeps the shell waiting for it.
  const auto command = "sh -c 'echo $$ > " + pid_file +
                       "; trap \"sleep 0.3; exit 0\" TERM; while :; do sleep 0.02; done'; exit $?";
  auto server = live::ServerProcess::start(command, dir->path() + "/log");
  ASSERT_TRUE(server.has_value());
  pid_t child = 0;
  for (int waited_ms = 0; waited_ms < 5'000 && child == 0; waited_ms += 10) {
    std::ifstream file(pid_file);
    file >> child;
    if (child == 0) std::this_thread::sleep_for(10ms);
  }
  ASSERT_GT(child, 0);
  ASSERT_NE(child, server->pid());  // a child of the shell, not the shell
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(server->stop(std::chrono::seconds(10)), 128 + SIGTERM);  // the shell died of it
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_FALSE(alive(child)) << "stop() returned while the server was still running";
  EXPECT_GE(took, 250ms) << "stop() did not wait for the server to exit";
  EXPECT_LT(took, 5s) << "stop() waited for SIGKILL: the server had exited on its own";
}

}  // namespace
}  // namespace lockstep::testing
