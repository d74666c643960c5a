#include "impl/cluster/bytes.hpp"

namespace lockstep::cluster {

void ByteWriter::u64(std::uint64_t value) {
  // One append of 8 bytes, little-endian whatever the host: snapshots write
  // many of them.
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(static_cast<std::uint8_t>(value >> (8 * i)));
  bytes_.append(bytes, sizeof bytes);
}

void ByteWriter::text(std::string_view value) {
  const auto length = static_cast<std::uint32_t>(value.size());
  char bytes[4];
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>(static_cast<std::uint8_t>(length >> (8 * i)));
  bytes_.append(bytes, sizeof bytes);
  bytes_.append(value);
}

bool ByteReader::take(std::size_t count) {
  if (failed_) return false;
  if (bytes_.size() - at_ < count) {
    fail("truncated");
    return false;
  }
  return true;
}

void ByteReader::fail(std::string_view reason) {
  if (!failed_) reason_.assign(reason);
  failed_ = true;
}

std::uint8_t ByteReader::u8() {
  if (!take(1)) return 0;
  return static_cast<std::uint8_t>(bytes_[at_++]);
}

std::uint64_t ByteReader::u64() {
  if (!take(8)) return 0;
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 8) {
    value |= std::uint64_t{static_cast<std::uint8_t>(bytes_[at_++])} << shift;
  }
  return value;
}

std::string ByteReader::text(std::size_t bytes_max) { return std::string(text_view(bytes_max)); }

std::string_view ByteReader::text_view(std::size_t bytes_max) {
  if (!take(4)) return {};
  std::uint32_t length = 0;
  for (int shift = 0; shift < 32; shift += 8) {
    length |= std::uint32_t{static_cast<std::uint8_t>(bytes_[at_++])} << shift;
  }
  if (length > bytes_max) {
    fail("string too long");
    return {};
  }
  if (!take(length)) return {};
  const std::string_view value = bytes_.substr(at_, length);
  at_ += length;
  return value;
}

}  // namespace lockstep::cluster
