#include "live/resource_watch.hpp"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace lockstep::live {

namespace {

using std::chrono::microseconds;
using std::chrono::seconds;

constexpr seconds minute{60};

// VmRSS and VmHWM of /proc/<pid>/status, in kB; nothing once it is gone.
bool read_status(const std::string& proc, std::int64_t& rss_kb, std::int64_t& hwm_kb) {
  std::ifstream status(proc + "/status");
  if (!status) return false;
  std::string line;
  bool found = false;
  while (std::getline(status, line)) {
    const auto value = [&] { return std::stoll(line.substr(line.find_first_of("0123456789"))); };
    if (line.starts_with("VmRSS:")) {
      rss_kb = value();
      found = true;
    } else if (line.starts_with("VmHWM:")) {
      hwm_kb = value();
    }
  }
  return found;
}

std::int64_t count_fds(const std::string& proc) {
  DIR* dir = opendir((proc + "/fd").c_str());
  if (dir == nullptr) return 0;
  std::int64_t count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

// The processes of the group `group` leads (a server's command runs in a
// group of its own: its shell, when it did not exec, and the server).
std::vector<pid_t> group_members(pid_t group) {
  std::vector<pid_t> members;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return members;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat("/proc/" + name + "/stat");
    std::string text;
    if (!std::getline(stat, text)) continue;
    // pid (comm) state ppid pgrp ...: the command's name may hold spaces.
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    long parent = 0, pgrp = 0;
    if (rest >> state >> parent >> pgrp && pgrp == group) members.push_back(static_cast<pid_t>(std::stol(name)));
  }
  closedir(dir);
  return members;
}

std::string megabytes(std::int64_t kb) { return fmt::format("{:.1f} MB", static_cast<double>(kb) / 1024.0); }

}  // namespace

std::optional<double> ProcessFigures::growth() const {
  if (!second_minute_kb || !last_minute_kb || *second_minute_kb <= 0) return std::nullopt;
  return static_cast<double>(*last_minute_kb) / static_cast<double>(*second_minute_kb);
}

ResourceWatch::ResourceWatch(seconds run_length, std::chrono::milliseconds period,
                             std::function<Clock::time_point()> now)
    : now_(std::move(now)), start_(now_()), run_length_(run_length), period_(period) {
  self_.name = "fuzzer";
  self_.runs = 1;
}

void ResourceWatch::started(const std::string& name, pid_t pid) {
  watched_[pid] = name;
  auto& figures = figures_[name];
  figures.name = name;
  ++figures.runs;
}

void ResourceWatch::sample(bool now) {
  const auto at = now_();
  if (!now && last_sample_ && at - *last_sample_ < period_) return;
  last_sample_ = at;
  const auto since = std::chrono::duration_cast<microseconds>(at - start_);
  for (const auto& [pid, name] : watched_) read(name, pid, since);
  Reading reading;
  if (read_status("/proc/self", reading.rss_kb, reading.hwm_kb)) {
    reading.fds = count_fds("/proc/self");
    note(self_, reading, since);
  }
}

void ResourceWatch::stopping(pid_t pid) {
  const auto found = watched_.find(pid);
  if (found == watched_.end()) return;
  read(found->second, pid, std::chrono::duration_cast<microseconds>(now_() - start_));
  watched_.erase(found);
}

void ResourceWatch::read(const std::string& name, pid_t pid, microseconds at) {
  // The whole group the process leads: a command that did not exec its
  // server is a shell, and the server its child.
  Reading total;
  bool any = false;
  for (const pid_t member : group_members(pid)) {
    const auto proc = fmt::format("/proc/{}", member);
    Reading reading;
    if (!read_status(proc, reading.rss_kb, reading.hwm_kb)) continue;  // gone, or a zombie
    any = true;
    total.rss_kb += reading.rss_kb;
    total.hwm_kb += reading.hwm_kb;
    total.fds += count_fds(proc);
  }
  if (any) note(figures_[name], total, at);
}

void ResourceWatch::note(ProcessFigures& figures, const Reading& reading, microseconds at) {
  figures.peak_rss_kb = std::max({figures.peak_rss_kb, reading.hwm_kb, reading.rss_kb});
  figures.peak_fds = std::max(figures.peak_fds, reading.fds);
  if (run_length_ < 3 * minute) return;
  const auto keep_max = [&](std::optional<std::int64_t>& slot) { slot = std::max(slot.value_or(0), reading.rss_kb); };
  if (at >= minute && at < 2 * minute) keep_max(figures.second_minute_kb);
  if (at >= run_length_ - minute) keep_max(figures.last_minute_kb);
}

std::vector<ProcessFigures> ResourceWatch::processes() const {
  std::vector<ProcessFigures> all;
  for (const auto& [name, figures] : figures_) all.push_back(figures);
  return all;
}

ProcessFigures ResourceWatch::tester() const { return self_; }

std::vector<std::string> resource_lines(const std::vector<ProcessFigures>& processes, const ProcessFigures& tester) {
  std::vector<std::string> lines;
  const auto line = [](const ProcessFigures& p) {
    std::string text = fmt::format("resources: {} peak {} resident, {} file descriptors at most", p.name,
                                   megabytes(p.peak_rss_kb), p.peak_fds);
    if (p.runs > 1) text += fmt::format(", {} runs", p.runs);
    if (const auto growth = p.growth()) {
      text += fmt::format("; largest {} in the second minute, {} in the last (x{:.2f})", megabytes(*p.second_minute_kb),
                          megabytes(*p.last_minute_kb), *growth);
    }
    return text;
  };
  lines.push_back(line(tester));
  for (const auto& p : processes) lines.push_back(line(p));
  return lines;
}

}  // namespace lockstep::live
