#include "live/process.hpp"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "impl/assert.hpp"

namespace lockstep::live {

std::string fill_template(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string result;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '{') {
      const auto close = text.find('}', i);
      if (close != std::string::npos) {
        const auto found = values.find(text.substr(i + 1, close - i - 1));
        if (found != values.end()) {
          result += found->second;
          i = close + 1;
          continue;
        }
      }
    }
    result += text[i++];
  }
  return result;
}

std::map<std::string, std::string> template_values(std::uint16_t port, const Limits& l) {
  return {{"port", std::to_string(port)},
          {"max_keys", std::to_string(l.max_keys)},
          {"max_waiters_per_key", std::to_string(l.max_waiters_per_key)},
          {"max_waiters", std::to_string(l.max_waiters)},
          {"sweep_ms", std::to_string(l.sweep_ms.value)},
          {"max_lease_ms", std::to_string(l.max_lease_ms.value)},
          {"max_wait_ms", std::to_string(l.max_wait_ms.value)},
          {"max_line_bytes", std::to_string(l.max_line_bytes)}};
}

void redirect_child_to_log(const std::string& log_path) {
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, 0);
  if (log >= 0) {
    dup2(log, 1);
    dup2(log, 2);
  }
  closefrom(3);
}

namespace {

// The process groups of the servers running now. A server runs in its own
// group, so a terminal's Ctrl-C does not reach it: when this process is
// stopped by a signal, the handler below ends those groups first, or they
// would outlive it. Plain atomics: a signal handler may read them.
constexpr std::size_t running_groups_max = 16;
std::atomic<pid_t> running_groups[running_groups_max];

void remember_group(pid_t group) {
  for (auto& slot : running_groups) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, group)) return;
  }
}

void forget_group(pid_t group) {
  for (auto& slot : running_groups) {
    pid_t expected = group;
    slot.compare_exchange_strong(expected, 0);
  }
}

// The temporary folders the servers' logs and data are in, removed by the
// handler below once the servers are gone. Fixed buffers, filled before a
// slot is marked taken, so that the handler reads no half-written path.
constexpr std::size_t folders_max = 8;
constexpr std::size_t folder_path_bytes_max = 256;
struct FolderSlot {
  std::atomic<bool> taken{false};
  char path[folder_path_bytes_max] = {};
};
FolderSlot folders[folders_max];
std::atomic_flag folders_lock = ATOMIC_FLAG_INIT;  // between threads that register; the handler only reads

// Removes `path` with rm -rf in a child: fork, execve and waitpid are
// async-signal-safe, and walking a folder is not.
void remove_folder_in_handler(const char* path) {
  const pid_t child = ::fork();
  if (child == 0) {
    char rm[] = "/bin/rm", rf[] = "-rf", end[] = "--";
    char* const argv[] = {rm, rf, end, const_cast<char*>(path), nullptr};
    char* const envp[] = {nullptr};
    ::execve(rm, argv, envp);
    ::_exit(127);
  }
  if (child > 0) ::waitpid(child, nullptr, 0);
}

// Only async-signal-safe calls: kill, waitpid, nanosleep, fork, execve.
extern "C" void stop_groups_and_die(int signal_number) {
  for (auto& slot : running_groups) {
    const pid_t group = slot.load();
    if (group > 0) ::kill(-group, SIGTERM);
  }
  // Reap each server (up to two seconds, then SIGKILL), so none is left
  // running or unreaped when this process is gone: every process of its
  // group, not only the command (a shell that did not `exec` exits first).
  for (int waited_ms = 0;; waited_ms += 10) {
    bool any = false;
    for (auto& slot : running_groups) {
      const pid_t group = slot.load();
      if (group <= 0) continue;
      ::waitpid(group, nullptr, WNOHANG);
      if (::kill(-group, 0) == 0) {
        any = true;
        if (waited_ms >= 2'000) {
          ::kill(-group, SIGKILL);
          ::waitpid(group, nullptr, 0);
        }
      }
    }
    if (!any || waited_ms >= 2'000) break;
    const timespec pause{0, 10'000'000};
    ::nanosleep(&pause, nullptr);
  }
  for (auto& slot : folders) {
    if (slot.taken.load()) remove_folder_in_handler(slot.path);
  }
  // Then die of the same signal, as if there had been no handler.
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

// Installed once, and only over the default action: a program that
// handles these signals itself keeps its handler.
void stop_groups_on_signals() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction current {};
      if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = stop_groups_and_die;
      sigemptyset(&action.sa_mask);
      ::sigaction(signal_number, &action, nullptr);
    }
  });
}

// The signal handler's table of folders: a folder is entered once created
// and taken off before its owner removes it.
bool remove_on_signal(const std::string& folder) {
  stop_groups_on_signals();
  if (folder.empty() || folder.size() >= folder_path_bytes_max) return false;
  while (folders_lock.test_and_set()) {
  }
  bool placed = false;
  for (auto& slot : folders) {
    if (slot.taken.load()) continue;
    folder.copy(slot.path, folder.size());
    slot.path[folder.size()] = '\0';
    slot.taken.store(true);
    placed = true;
    break;
  }
  folders_lock.clear();
  return placed;
}

void keep_on_signal(const std::string& folder) {
  while (folders_lock.test_and_set()) {
  }
  for (auto& slot : folders) {
    if (slot.taken.load() && folder == slot.path) slot.taken.store(false);
  }
  folders_lock.clear();
}

// Whether a process of `group` has not exited. kill() finds zombies too,
// and a server orphaned by its shell is reaped by whoever adopted it, maybe
// never: /proc tells a zombie from a process that runs.
bool group_has_live_member(pid_t group) {
  if (::kill(-group, 0) != 0 && errno == ESRCH) return false;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream file(entry.path() / "stat");
    std::string stat;
    std::getline(file, stat);
    // "pid (command) state ppid pgrp ...": the command may hold spaces and
    // parentheses, so the fields are read after the last ')'.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    char state = 0;
    long parent = 0, process_group = 0;
    if (!(fields >> state >> parent >> process_group)) continue;
    if (process_group == group && state != 'Z' && state != 'X') return true;
  }
  return false;
}

}  // namespace

void stop_on_signal(pid_t group) {
  stop_groups_on_signals();
  remember_group(group);
}

void forget_on_signal(pid_t group) { forget_group(group); }

std::string temporary_base() {
  const char* base = std::getenv("TMPDIR");
  return base != nullptr && *base != '\0' ? base : "/tmp";
}

std::optional<TemporaryFolder> TemporaryFolder::create(const std::string& stem) {
  std::string name = temporary_base() + "/" + stem + "-XXXXXX";
  if (mkdtemp(name.data()) == nullptr) return std::nullopt;
  remove_on_signal(name);
  return TemporaryFolder(std::move(name));
}

TemporaryFolder::TemporaryFolder(TemporaryFolder&& other) noexcept : path_(std::move(other.path_)) {
  other.path_.clear();
}

TemporaryFolder::~TemporaryFolder() {
  if (path_.empty()) return;
  keep_on_signal(path_);
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::optional<ServerProcess> ServerProcess::start(const std::string& command, const std::string& log_path) {
  stop_groups_on_signals();
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    setpgid(0, 0);
    // If this process dies without stopping it (killed, crashed), the
    // server is told at once: no server outlives the tool that started it.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
    redirect_child_to_log(log_path);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  remember_group(pid);
  return ServerProcess(pid, log_path);
}

ServerProcess::ServerProcess(ServerProcess&& other) noexcept
    : pid_(other.pid_), reaped_(other.reaped_), status_(other.status_), log_path_(std::move(other.log_path_)) {
  other.pid_ = -1;
  other.reaped_ = false;
  check_state();
}

// None (pid_ -1, nothing reaped), or a group started whose leader is pid_:
// never 0 or 1, which kill(-pid) would read as the tool's own group or as
// every process there is.
void ServerProcess::check_state() const { LOCKSTEP_ASSERT(pid_ == -1 ? !reaped_ : pid_ > 1); }

void ServerProcess::signal_group(int signal) const {
  check_state();
  LOCKSTEP_ASSERT(pid_ > 1);
  kill(-pid_, signal);
}

ServerProcess::~ServerProcess() { stop(); }

void ServerProcess::reap_if_exited() {
  if (pid_ < 0 || reaped_) return;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
}

bool ServerProcess::running() {
  if (pid_ < 0) return false;
  reap_if_exited();
  if (!reaped_) return true;
  signal_group(SIGKILL);  // whatever else the command started
  forget_group(pid_);
  pid_ = -1;
  reaped_ = false;
  return false;
}

void ServerProcess::terminate() {
  if (pid_ < 0) return;
  signal_group(SIGTERM);
  signal_group(SIGCONT);  // a paused process must run to see its SIGTERM
}

bool ServerProcess::group_alive() {
  if (pid_ < 0) return false;
  reap_if_exited();
  return group_has_live_member(pid_);
}

int ServerProcess::stop(std::chrono::milliseconds grace) {
  check_state();
  if (pid_ < 0) return -1;
  terminate();
  // The whole group, not only the command: a shell that did not `exec` its
  // server exits at once, and the server may take its time.
  const auto wait_for_group = [this](std::chrono::steady_clock::time_point until) {
    while (group_alive()) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  };
  if (!wait_for_group(std::chrono::steady_clock::now() + grace)) {
    signal_group(SIGKILL);
    // SIGKILL cannot be caught: what is left ends within moments, unless it
    // is stuck in the kernel; the tool does not wait for that forever.
    wait_for_group(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  }
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
  forget_group(pid_);
  pid_ = -1;
  reaped_ = false;
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  return WIFSIGNALED(status_) ? 128 + WTERMSIG(status_) : -1;
}

void ServerProcess::send_signal(int signal) {
  if (pid_ > 0) signal_group(signal);
}

std::string ServerProcess::log_tail() const {
  std::ifstream file(log_path_);
  std::stringstream text;
  text << file.rdbuf();
  auto all = text.str();
  if (all.size() > 2000) all = all.substr(all.size() - 2000);
  return all;
}

}  // namespace lockstep::live

namespace lockstep::live {

Accepting wait_until_accepting(ServerProcess& server, const std::string& host, std::uint16_t port,
                               std::chrono::milliseconds patience) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (true) {
    if (auto socket = client::LineSocket::connect(host, port, std::chrono::milliseconds(0))) {
      return Accepting{std::move(socket), {}, {}};
    }
    if (!server.running()) {
      return Accepting{std::nullopt, fmt::format("it exited before it accepted a connection on port {}", port),
                       server.log_tail()};
    }
    if (std::chrono::steady_clock::now() >= give_up) {
      return Accepting{std::nullopt,
                       fmt::format("it did not accept a connection on port {} within {} ms", port, patience.count()),
                       server.log_tail()};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool port_accepts(const std::string& host, std::uint16_t port) {
  return client::LineSocket::connect(host, port, std::chrono::milliseconds(0)).has_value();
}

}  // namespace lockstep::live
