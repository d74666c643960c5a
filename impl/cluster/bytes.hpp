// The byte layer under the cluster's log commands and snapshots: fixed-width
// little-endian integers and length-prefixed strings. Writing cannot fail;
// reading never trusts its input: every read checks the bytes left and a
// failed read leaves the reader failed, so a decoder checks once at the end
// instead of after every field. Deterministic by construction (no padding,
// no host byte order), so every replica encodes one command to one string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep::cluster {

class ByteWriter {
 public:
  void u8(std::uint8_t value) { bytes_.push_back(static_cast<char>(value)); }
  void u64(std::uint64_t value);
  void i64(std::int64_t value) { u64(static_cast<std::uint64_t>(value)); }
  // A u32 length, then the bytes.
  void text(std::string_view value);
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  std::uint8_t u8();
  std::uint64_t u64();
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  // A string of at most `bytes_max` bytes; longer is a failure.
  std::string text(std::size_t bytes_max);
  // The same, as a view into the bytes being read.
  std::string_view text_view(std::size_t bytes_max);

  bool failed() const { return failed_; }
  bool at_end() const { return at_ == bytes_.size(); }
  // Marks the input bad for a reason found above the byte layer (a value out
  // of range); the first reason is kept.
  void fail(std::string_view reason);
  const std::string& reason() const { return reason_; }

 private:
  bool take(std::size_t count);

  std::string_view bytes_;
  std::size_t at_ = 0;
  bool failed_ = false;
  std::string reason_;
};

}  // namespace lockstep::cluster
