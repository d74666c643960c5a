// Splits a byte stream into `\n`-terminated lines with a bound on the bytes
// it holds: a partial line longer than the limit is reported as overlong
// instead of being buffered, so a peer that never sends a newline cannot
// make its reader grow. Used by the server for requests and by clients for
// responses.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep {

class LineFramer {
 public:
  explicit LineFramer(std::size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Appends received bytes. Returns false (and keeps nothing more) once the
  // current partial line has grown past the limit.
  bool feed(std::string_view bytes);

  // The next complete line without its `\n`, if one is buffered. The view is
  // valid until the next call of feed or next_line.
  std::optional<std::string_view> next_line();

  // True when a line past the limit arrived: the connection should answer E
  // and close. Complete lines before it are still returned by next_line.
  bool overlong() const { return overlong_; }
  bool has_complete_line() const { return buffer_.find('\n', consumed_) != std::string::npos; }
  std::size_t buffered_bytes() const { return buffer_.size() - consumed_; }

 private:
  std::size_t max_line_bytes_;
  std::string buffer_;
  std::size_t consumed_ = 0;
  bool overlong_ = false;
};

}  // namespace lockstep
