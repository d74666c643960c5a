// Files and folders on the command line (validators.hpp): read or written,
// each checked before anything runs, and nothing created by the check.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "cli/validators.hpp"

namespace lockstep::cli {

namespace {

namespace fs = std::filesystem;

std::string system_error() { return std::strerror(errno); }

}  // namespace

std::string why_not_readable_file(const std::string& path) {
  std::error_code error;
  const auto status = fs::status(path, error);
  if (!fs::exists(status)) return fmt::format("cannot read {}: no such file", path);
  if (fs::is_directory(status)) return fmt::format("{} is a folder, not a file", path);
  if (::access(path.c_str(), R_OK) != 0) return fmt::format("cannot read {}: {}", path, system_error());
  return {};
}

std::string why_not_writable_file(const std::string& path) {
  if (path.empty()) return "an empty file name";
  std::error_code error;
  const auto status = fs::status(path, error);
  if (fs::is_directory(status)) return fmt::format("{} is a folder, not a file", path);
  if (fs::exists(status)) {
    if (::access(path.c_str(), W_OK) != 0) return fmt::format("cannot write {}: {}", path, system_error());
    return {};
  }
  auto parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, error)) {
    return fmt::format("cannot write {}: there is no folder {}", path, parent.string());
  }
  if (::access(parent.c_str(), W_OK) != 0) return fmt::format("cannot write {}: {}", path, system_error());
  return {};
}

std::string why_not_writable_folder(const std::string& path) {
  if (path.empty()) return "an empty folder name";
  std::error_code error;
  fs::path at = fs::absolute(path, error);
  // The folder itself, or the nearest ancestor that exists: it must be a
  // folder that can be written (the rest is created).
  while (!fs::exists(at, error) && at.has_parent_path() && at.parent_path() != at) at = at.parent_path();
  if (!fs::is_directory(at, error)) {
    return fmt::format("cannot write into {}: {} is not a folder", path, at.string());
  }
  if (::access(at.c_str(), W_OK) != 0) return fmt::format("cannot write into {}: {}", path, system_error());
  return {};
}

CLI::Validator readable_file() {
  return CLI::Validator([](std::string& path) { return why_not_readable_file(path); }, "a file that can be read",
                        "readable file");
}

CLI::Validator readable_path() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        std::error_code error;
        if (!fs::exists(path, error)) return fmt::format("cannot read {}: no such file or folder", path);
        if (::access(path.c_str(), R_OK) != 0) return fmt::format("cannot read {}: {}", path, system_error());
        return {};
      },
      "a file or folder that can be read", "readable path");
}

CLI::Validator writable_file() {
  return CLI::Validator([](std::string& path) { return why_not_writable_file(path); }, "a file that can be written",
                        "writable file");
}

CLI::Validator writable_folder() {
  return CLI::Validator([](std::string& path) { return why_not_writable_folder(path); },
                        "a folder that can be written", "writable folder");
}

// The state file is read at start and rewritten as the token mark grows:
// it must be a file, readable if it exists, in a folder that can be written.
CLI::Validator state_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        auto why = why_not_writable_file(path);
        if (why.empty() && fs::exists(path)) why = why_not_readable_file(path);
        return why;
      },
      "a file that can be read and written", "state file");
}

// The redis-server binary: a path to an executable file, or a name found
// on PATH. Checked before anything starts, so a typo is one line, not a
// server that never answers.
CLI::Validator executable_on_path() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        const auto executable = [](const std::filesystem::path& path) {
          std::error_code error;
          return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
        };
        if (name.find('/') != std::string::npos) {
          return executable(name) ? std::string() : fmt::format("{} is not an executable file", name);
        }
        const char* path = std::getenv("PATH");
        std::string folders = path != nullptr ? path : "";
        for (std::size_t start = 0; start <= folders.size();) {
          const auto end = std::min(folders.find(':', start), folders.size());
          const auto folder = folders.substr(start, end - start);
          if (!folder.empty() && executable(std::filesystem::path(folder) / name)) return {};
          start = end + 1;
        }
        return fmt::format("{} is not found on PATH", name);
      },
      "an executable", "executable");
}

}  // namespace lockstep::cli
