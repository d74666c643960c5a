// Starting `lockstep serve` for a test: a free port, the process, a
// connection helper, and small request helpers; and running a `lockstep`
// command to its end.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "client/line_socket.hpp"
#include "live/process.hpp"

namespace lockstep::testing {

inline std::string lockstep_binary() {
  const char* path = std::getenv("LOCKSTEP_BINARY");
  return path ? path : "lockstep";
}

// What a command printed (stdout and stderr), its exit code and how long it
// took.
struct CommandRun {
  int code = -1;
  std::string output;
  double seconds = 0;
};

// Runs a shell command line to its end, killed after 30 s (a hang fails).
inline CommandRun run_command(const std::string& command_line) {
  const auto started = std::chrono::steady_clock::now();
  const auto command = "timeout -s KILL 30 " + command_line + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  CommandRun run;
  char buffer[4096];
  while (const auto got = fread(buffer, 1, sizeof buffer, pipe)) run.output.append(buffer, got);
  const int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return run;
}

inline CommandRun run_lockstep(const std::string& args) { return run_command(lockstep_binary() + " " + args); }

inline std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// How long a test waits for a clean exit after SIGTERM before it kills.
inline constexpr std::chrono::seconds clean_exit_grace{30};

class TestServer {
 public:
  explicit TestServer(const std::string& options) {
    port_ = client::pick_free_port().value();
    const auto command = "exec " + lockstep_binary() + " serve --quiet --port " + std::to_string(port_) + " " + options;
    log_ = "/tmp/lockstep-test-server-" + std::to_string(port_) + ".log";
    process_.emplace(live::ServerProcess::start(command, log_).value());
  }
  ~TestServer() { std::remove(log_.c_str()); }

  client::LineSocket connect() {
    auto socket = client::LineSocket::connect("127.0.0.1", port_, std::chrono::seconds(10));
    if (!socket) ADD_FAILURE() << "cannot connect to the server: " << process_->log_tail();
    return std::move(*socket);
  }
  // Stops with SIGTERM; returns the exit status. The grace before SIGKILL is
  // long: the claim is that the server exits cleanly, not how fast it does
  // so in a sanitized build on a loaded machine (it once took over 2 s there).
  int stop() { return process_->stop(clean_exit_grace); }
  pid_t pid() const { return process_->pid(); }
  bool running() { return process_->running(); }
  std::uint16_t port() const { return port_; }
  std::string log() const { return process_->log_tail(); }

 private:
  std::uint16_t port_ = 0;
  std::string log_;
  std::optional<live::ServerProcess> process_;
};

inline std::string next_line(client::LineSocket& socket, std::chrono::milliseconds patience = std::chrono::seconds(5)) {
  std::string line;
  const auto status = socket.read_line(line, patience);
  if (status != client::LineSocket::Status::line) return status == client::LineSocket::Status::closed ? "<closed>" : "<timeout>";
  return line;
}

// Sends a request and returns its answer's first letter, or the whole line.
inline std::string request(client::LineSocket& socket, const std::string& line, bool whole = false) {
  socket.send_line(line);
  auto answer = next_line(socket);
  return whole ? answer : answer.substr(0, answer.empty() ? 0 : 1);
}

// The token of an `A <token> <owner> <key>` line.
inline std::string granted_token(const std::string& line) {
  const auto first = line.find(' ');
  const auto second = line.find(' ', first + 1);
  if (line.rfind("A ", 0) != 0 || second == std::string::npos) {
    ADD_FAILURE() << "not a grant: " << line;
    return "0";
  }
  return line.substr(first + 1, second - first - 1);
}

}  // namespace lockstep::testing
