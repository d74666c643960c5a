#include "drivers/etcd/log_format.hpp"

#include <algorithm>

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
  cluster_ = prefix_ + "cluster";
  claims_prefix_ = prefix_ + "node/";
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

namespace {

constexpr std::string_view membership_header = "lockstep-cluster";
constexpr std::string_view membership_version = "1";
constexpr std::size_t node_id_bytes_max = 64;

bool printable_without_space(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c > ' ' && c <= '~'; });
}

// The words of one line, split on single spaces.
std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t start = 0;
  while (start <= line.size()) {
    const auto space = std::min(line.find(' ', start), line.size());
    words.push_back(line.substr(start, space - start));
    start = space + 1;
  }
  return words;
}

}  // namespace

bool valid_node_id(std::string_view id) { return id.size() <= node_id_bytes_max && printable_without_space(id); }

bool valid_member_address(std::string_view address) {
  const auto colon = address.rfind(':');
  if (!printable_without_space(address) || address.size() > 255 || colon == std::string_view::npos || colon == 0) {
    return false;
  }
  const auto port = address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
  const auto value = std::stoul(std::string(port));
  return value >= 1 && value <= 65535 && port.front() != '0';
}

std::optional<std::string> check_members(const std::vector<Member>& members) {
  if (members.empty() || members.size() > members_max) {
    return fmt::format("a cluster has 1 to {} members, not {}", members_max, members.size());
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto& m = members[i];
    if (!valid_node_id(m.node_id)) {
      return fmt::format("'{}' is not a node id (1 to {} printable bytes without space)", m.node_id, node_id_bytes_max);
    }
    if (!valid_member_address(m.advertise)) {
      return fmt::format("the address of {}, '{}', is not host:port", m.node_id, m.advertise);
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (members[j].node_id == m.node_id) return fmt::format("node id {} is given twice", m.node_id);
      if (members[j].advertise == m.advertise) {
        return fmt::format("{} and {} have one address, {}", members[j].node_id, m.node_id, m.advertise);
      }
    }
  }
  return std::nullopt;
}

std::string encode_membership(const Membership& membership) {
  std::string text = fmt::format("{} {} {}\n", membership_header, membership_version, membership.cluster_id);
  for (const auto& m : membership.members) text += fmt::format("member {} {}\n", m.node_id, m.advertise);
  return text;
}

std::optional<Membership> decode_membership(std::string_view bytes, std::string& error) {
  Membership membership;
  bool header = false;
  while (!bytes.empty()) {
    const auto end = bytes.find('\n');
    if (end == std::string_view::npos) {
      error = "the membership does not end with a line break";
      return std::nullopt;
    }
    const auto words = words_of(bytes.substr(0, end));
    bytes.remove_prefix(end + 1);
    if (!header) {
      if (words.size() != 3 || words[0] != membership_header || words[1] != membership_version ||
          words[2].size() != 16 || words[2].find_first_not_of("0123456789abcdef") != std::string_view::npos) {
        error = "the membership is not in a format this version reads";
        return std::nullopt;
      }
      membership.cluster_id = words[2];
      header = true;
    } else if (words.size() == 3 && words[0] == "member") {
      membership.members.push_back(Member{std::string(words[1]), std::string(words[2])});
    } else {
      error = "the membership holds a line that is not a member";
      return std::nullopt;
    }
  }
  if (!header) {
    error = "the membership is empty";
    return std::nullopt;
  }
  if (auto bad = check_members(membership.members)) {
    error = "the membership is not valid: " + *bad;
    return std::nullopt;
  }
  return membership;
}

std::optional<std::vector<Member>> parse_members(std::string_view text, std::string& error) {
  std::vector<Member> members;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    const auto item = text.substr(start, comma - start);
    start = comma + 1;
    const auto equals = item.find('=');
    if (equals == std::string_view::npos) {
      error = fmt::format("'{}' is not ID=HOST:PORT", item);
      return std::nullopt;
    }
    members.push_back(Member{std::string(item.substr(0, equals)), std::string(item.substr(equals + 1))});
  }
  if (auto bad = check_members(members)) {
    error = *bad;
    return std::nullopt;
  }
  return members;
}

const Member* find_member(const Membership& membership, std::string_view node_id) {
  for (const auto& m : membership.members) {
    if (m.node_id == node_id) return &m;
  }
  return nullptr;
}

std::string describe_members(const std::vector<Member>& members) {
  std::string text;
  for (const auto& m : members) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", m.node_id, m.advertise);
  return text;
}

std::string encode_claim(const ClaimRecord& record) {
  return fmt::format("{} {} {} {}", record.node_id, record.advertise, record.ttl_s, record.owner);
}

std::optional<ClaimRecord> decode_claim(std::string_view bytes) {
  const auto words = words_of(bytes);
  if (words.size() != 4 || words[2].empty() || words[2].size() > 6 ||
      words[2].find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return ClaimRecord{std::string(words[0]), std::string(words[1]), std::stoll(std::string(words[2])),
                     std::string(words[3])};
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
