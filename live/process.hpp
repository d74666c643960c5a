// A server under test, started from a shell command template and stopped
// again: the `{name}` placeholders of the template are filled in, the
// command runs in its own process group, and stopping it ends the group:
// SIGTERM to every process of it, and the server is gone only when every
// one has exited (a template without `exec` leaves /bin/sh as the group's
// leader and the server as its child, and the shell exits first).
// No server outlives the tool that started it: SIGINT, SIGTERM or SIGHUP
// to the tool first sends SIGTERM to every group still running (unless the
// tool handles those signals itself) and then removes the tool's temporary
// folders that were registered, and a server whose starter dies any
// other way gets SIGTERM from the kernel (PR_SET_PDEATHSIG). The kernel
// ties that to the thread that started the server, so start() must be
// called from a thread that outlives it (every caller uses the main thread).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <sys/types.h>

#include "client/line_socket.hpp"
#include "impl/limits.hpp"

namespace lockstep::live {

// Replaces every `{name}` whose name is a key of `values`; other text stays.
std::string fill_template(const std::string& text, const std::map<std::string, std::string>& values);

// `{port}` and every limit of docs/protocol.md (`{max_keys}` ...).
std::map<std::string, std::string> template_values(std::uint16_t port, const Limits& limits);

// In a child just forked, before exec: stdin from /dev/null, stdout and
// stderr into `log_path` (truncated), and no other descriptor of the parent
// inherited (sockets, log files).
void redirect_child_to_log(const std::string& log_path);

// Where the tool makes its temporary folders: $TMPDIR, or /tmp when it is
// unset or empty.
std::string temporary_base();

// A temporary folder of the tool's own (servers' logs, etcd's data, TLC's
// work), $TMPDIR/STEM-XXXXXX (/tmp when TMPDIR is unset), removed with what
// it holds when it is destroyed, and also by a SIGINT, SIGTERM or SIGHUP to
// the tool after the servers are stopped (at most 8 folders at once are
// known to the signal handler; a path longer than 255 bytes is removed only
// on a normal exit).
class TemporaryFolder {
 public:
  // Nothing when the folder cannot be created.
  static std::optional<TemporaryFolder> create(const std::string& stem);
  TemporaryFolder(TemporaryFolder&& other) noexcept;
  TemporaryFolder& operator=(TemporaryFolder&&) = delete;
  ~TemporaryFolder();

  const std::string& path() const { return path_; }
  // The six characters that make the name unique among the tool's runs.
  std::string suffix() const { return path_.substr(path_.size() - 6); }

 private:
  explicit TemporaryFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;  // empty once moved from
};

// For a child the caller forks and waits for itself (TLC's java, run to its
// end): the child calls setpgid(0, 0), the parent then names it here, and a
// SIGINT, SIGTERM or SIGHUP to the tool stops it as it stops a server, before
// the temporary folders go. `forget_on_signal` once it has been reaped.
void stop_on_signal(pid_t group);
void forget_on_signal(pid_t group);

class ServerProcess {
 public:
  // Runs `command` with /bin/sh; its output goes to `log_path`.
  static std::optional<ServerProcess> start(const std::string& command, const std::string& log_path);
  ServerProcess(ServerProcess&& other) noexcept;
  ServerProcess& operator=(ServerProcess&&) = delete;
  ~ServerProcess();

  // SIGTERM to the group, then SIGKILL to what is left of it if it has not
  // all exited within `grace`; returns once every process of the group has
  // exited. Returns the exit status of the command (128 + signal if it was
  // killed), -1 if it had already been reaped. The tool's own uses keep the
  // short default; a test that asserts a clean exit passes a longer grace,
  // since a sanitized server on a loaded machine can take seconds to reach
  // its exit.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(2));
  // The first half of stop(), for a caller that has more to do while the
  // server shuts down (read what it still sends): SIGTERM (and SIGCONT) to
  // the group, without waiting.
  void terminate();
  // Whether some process of the group has not exited yet (a zombie counts
  // as exited). Reaps the command when it has exited.
  bool group_alive();
  pid_t pid() const { return pid_; }
  // Sends `signal` to its process group (SIGKILL, SIGSTOP, SIGCONT ...).
  void send_signal(int signal);
  // Whether the command is still running (it may have exited on its own);
  // when it has exited, what it left of its group is killed.
  bool running();
  // The tail of what it printed, for error messages.
  std::string log_tail() const;

 private:
  ServerProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}
  // Reaps the command if it has exited (status_ then holds its status).
  void reap_if_exited();
  void check_state() const;
  // `signal` to the whole group: only to a group started (check_state).
  void signal_group(int signal) const;
  pid_t pid_ = -1;
  bool reaped_ = false;  // the command (the group's leader) has been waited for
  int status_ = 0;
  std::string log_path_;
};

// Waits until `server` accepts a connection on host:port. Returns the
// connection, or why there is none (one line: the command exited first, or
// `patience` passed) and the tail of what the server printed. A server is
// ready only when it accepts: a tool that started it never counts on it
// before.
struct Accepting {
  std::optional<client::LineSocket> socket;
  std::string why_not;
  std::string output;
};
Accepting wait_until_accepting(ServerProcess& server, const std::string& host, std::uint16_t port,
                               std::chrono::milliseconds patience);

// Whether something accepts a connection on host:port now (one attempt).
bool port_accepts(const std::string& host, std::uint16_t port);

}  // namespace lockstep::live
