#include "drivers/server/token_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "impl/decimal.hpp"

namespace lockstep {

namespace {

Token wall_clock_floor() {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count();
  return Token{static_cast<std::uint64_t>(std::max<std::int64_t>(micros, 0)) * 16 + 1};
}

}  // namespace

std::optional<Token> TokenStore::open(const std::string& path) {
  path_ = path;
  Token first = wall_clock_floor();
  if (path_.empty()) return first;
  std::error_code status_error;
  if (std::filesystem::is_directory(path_, status_error)) {
    error_ = fmt::format("state file {} is a folder, not a file", path_);
    return std::nullopt;
  }
  std::ifstream file(path_);
  if (file) {
    std::stringstream text;
    text << file.rdbuf();
    if (file.bad()) {
      error_ = fmt::format("cannot read state file {}", path_);
      return std::nullopt;
    }
    std::string content = text.str();
    while (!content.empty() && (content.back() == '\n' || content.back() == ' ')) content.pop_back();
    const auto mark = parse_decimal(content);
    if (!mark) {
      error_ = fmt::format("state file {} does not hold a token mark (a decimal number)", path_);
      return std::nullopt;
    }
    if (*mark == UINT64_MAX) {
      error_ = fmt::format("state file {}: tokens exhausted: its mark is {}, the last token, so no token is left "
                           "to issue",
                           path_, *mark);
      return std::nullopt;
    }
    persisted_ = Token{*mark};
    first = std::max(first, Token{*mark + 1});
  } else if (errno != ENOENT) {
    error_ = fmt::format("cannot read state file {}: {}", path_, std::strerror(errno));
    return std::nullopt;
  }
  // Record that this run starts at `first`, so that even a run that issues
  // nothing leaves the mark where the next one must start above.
  if (!persist(Token{first.value - 1})) return std::nullopt;
  return first;
}

bool TokenStore::persist(Token mark) {
  if (path_.empty() || mark <= persisted_) return true;
  const auto temporary = path_ + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error_ = fmt::format("cannot write {}: {}", temporary, std::strerror(errno));
    return false;
  }
  const auto text = fmt::format("{}\n", mark.value);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), path_.c_str()) != 0) {
    error_ = fmt::format("cannot persist {}: {}", path_, std::strerror(errno));
    return false;
  }
  persisted_ = mark;
  return true;
}

}  // namespace lockstep
