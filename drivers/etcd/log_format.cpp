#include "drivers/etcd/log_format.hpp"

#include <fmt/format.h>

#include "impl/cluster/bytes.hpp"

namespace lockstep::etcd {

namespace {

// Fixed-width lower-case hex: keys sort as their numbers do.
std::string hex(std::uint64_t value, int width) { return fmt::format("{:0{}x}", value, width); }

constexpr std::size_t prefix_bytes_max = 200;

}  // namespace

Keys::Keys(std::string prefix) : prefix_(std::move(prefix)) {
  if (prefix_.empty() || prefix_.back() != '/') prefix_ += '/';
  leader_ = prefix_ + "leader";
  log_prefix_ = prefix_ + "log/";
  snapshot_ = prefix_ + "snapshot";
  chunks_prefix_ = prefix_ + "snap/";
  incarnation_ = prefix_ + "incarnation";
}

std::string Keys::log_key(std::uint64_t epoch, std::uint64_t write) const {
  return log_prefix_ + hex(epoch, 16) + "/" + hex(write, 16);
}

bool Keys::is_log_key(std::string_view key) const { return key.starts_with(log_prefix_); }

std::string Keys::chunk_prefix(std::uint64_t index) const { return chunks_prefix_ + hex(index, 16) + "/"; }

std::string Keys::chunk_key(std::uint64_t index, std::uint32_t chunk) const {
  return chunk_prefix(index) + hex(chunk, 8);
}

std::string Keys::watch_end() const {
  // The key just after every P/log/... key: '/' + 1 is '0'.
  return prefix_ + "log0";
}

bool valid_prefix(std::string_view prefix, std::string& error) {
  if (prefix.empty() || prefix.size() > prefix_bytes_max) {
    error = fmt::format("the etcd prefix must be 1 to {} bytes", prefix_bytes_max);
    return false;
  }
  for (const char c : prefix) {
    if (c <= ' ' || c > '~') {
      error = "the etcd prefix must be printable ASCII without space";
      return false;
    }
  }
  return true;
}

std::string encode_pointer(const SnapshotPointer& pointer) {
  cluster::ByteWriter w;
  w.u8(log_format_version);
  w.u64(pointer.index);
  w.u64(pointer.bytes);
  w.u64(pointer.chunks);
  w.u64(pointer.hash);
  return w.take();
}

std::optional<SnapshotPointer> decode_pointer(std::string_view bytes, std::string& error) {
  cluster::ByteReader r(bytes);
  const auto version = r.u8();
  SnapshotPointer pointer;
  pointer.index = r.u64();
  pointer.bytes = r.u64();
  const auto chunks = r.u64();
  pointer.hash = r.u64();
  if (r.failed() || !r.at_end() || version != log_format_version) {
    error = "the snapshot pointer is not in a format this version reads";
    return std::nullopt;
  }
  const auto chunks_needed = (pointer.bytes + snapshot_chunk_bytes - 1) / snapshot_chunk_bytes;
  if (pointer.index == 0 || chunks != std::max<std::uint64_t>(chunks_needed, 1)) {
    error = fmt::format("the snapshot pointer names {} chunks for {} bytes at index {}", chunks, pointer.bytes,
                        pointer.index);
    return std::nullopt;
  }
  pointer.chunks = static_cast<std::uint32_t>(chunks);
  return pointer;
}

std::string encode_leader(const LeaderRecord& record) { return record.node_id + " " + record.advertise; }

std::optional<LeaderRecord> decode_leader(std::string_view bytes) {
  const auto space = bytes.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == bytes.size()) return std::nullopt;
  if (bytes.find(' ', space + 1) != std::string_view::npos) return std::nullopt;
  return LeaderRecord{std::string(bytes.substr(0, space)), std::string(bytes.substr(space + 1))};
}

std::uint64_t fnv1a_64(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace lockstep::etcd
