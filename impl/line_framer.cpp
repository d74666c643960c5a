#include "impl/line_framer.hpp"

namespace lockstep {

bool LineFramer::feed(std::string_view bytes) {
  if (overlong_) return false;
  // Drop what was consumed before growing, so the buffer holds at most one
  // partial line plus the complete lines not yet taken.
  if (consumed_ > 0) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes);
  // The partial tail (after the last newline) must stay within the limit.
  const auto last_newline = buffer_.rfind('\n');
  const auto tail = last_newline == std::string::npos ? buffer_.size() : buffer_.size() - last_newline - 1;
  if (tail > max_line_bytes_) {
    overlong_ = true;
    buffer_.resize(buffer_.size() - tail);  // keep the complete lines before it
    return false;
  }
  return true;
}

std::optional<std::string_view> LineFramer::next_line() {
  const auto newline = buffer_.find('\n', consumed_);
  if (newline == std::string::npos) return std::nullopt;
  std::string_view line(buffer_.data() + consumed_, newline - consumed_);
  consumed_ = newline + 1;
  return line;
}

}  // namespace lockstep
