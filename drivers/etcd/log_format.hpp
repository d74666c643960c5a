// Where cluster mode keeps its replicated log in etcd, and in what bytes.
// Plain functions, no IO: the layout the etcd driver (log.hpp) reads and
// writes, kept apart so that it is tested without an etcd.
//
// Under a prefix P (a `/` is added when P does not end with one):
//   P/leader             the election key: `<node-id> <host:port>`, attached
//                        to the leader's lease; its create revision is the
//                        leader's epoch, which every write of the leader
//                        compares (the fence)
//   P/log/<epoch>/<n>    one log entry (16 hex digits each): the n-th write
//                        of the leader of that epoch, whose value is the
//                        bytes of the proposals it carries (group commit).
//                        Epochs increase and n counts up within one, so keys
//                        sort in log order; the entry's index is the etcd
//                        revision that wrote it
//   P/snapshot           the pointer to the latest snapshot
//   P/snap/<index>/<c>   the snapshot of index <index> (16 hex), in chunks
//                        (<c>, 8 hex)
//   P/incarnation        written by each node at start: the revision of that
//                        write is unique over the cluster's life, and names
//                        the node's connections
//   P/cluster            the cluster's identity and membership, written once
//                        by `lockstep cluster init` (or `serve --cluster
//                        --init`) and changed by `lockstep cluster add` and
//                        `remove` (each a transaction on its revision): a
//                        node starts only on a prefix that holds one, and
//                        only as one of its members
//   P/node/<id>          the claim of the process that runs node <id>,
//                        attached to a lease it keeps alive: a second process
//                        with that id is refused while the claim lives
// A node follows the keys [P/leader, end of P/log/): the election key and
// the log, in etcd's revision order, and not the snapshots' bytes, the
// membership or the claims.
//
// The membership is text, so that `etcdctl get P/cluster` reads it:
//   lockstep-cluster 1 <cluster id, 16 hex digits>
//   member <node id> <host:port>        (one line per member, in the order given)
// and a claim is `<node id> <host:port> <ttl_s> <pid>@<host name>`.
//
// A snapshot pointer is version 1, then the index the snapshot covers, its
// total bytes, its chunk count and its FNV-1a 64 hash, each a u64
// little-endian.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::etcd {

inline constexpr std::uint8_t log_format_version = 1;
// Bytes per log entry and per snapshot chunk: well inside etcd's default
// request limit of 1.5 MiB.
inline constexpr std::size_t entry_bytes_max = 512 * 1024;
inline constexpr std::size_t snapshot_chunk_bytes = 1024 * 1024;

class Keys {
 public:
  explicit Keys(std::string prefix);
  const std::string& prefix() const { return prefix_; }
  const std::string& leader() const { return leader_; }
  const std::string& log_prefix() const { return log_prefix_; }
  std::string log_key(std::uint64_t epoch, std::uint64_t write) const;
  bool is_log_key(std::string_view key) const;
  const std::string& snapshot() const { return snapshot_; }
  const std::string& chunks_prefix() const { return chunks_prefix_; }
  std::string chunk_prefix(std::uint64_t index) const;
  std::string chunk_key(std::uint64_t index, std::uint32_t chunk) const;
  const std::string& incarnation() const { return incarnation_; }
  const std::string& cluster() const { return cluster_; }
  const std::string& claims_prefix() const { return claims_prefix_; }
  std::string claim(std::string_view node_id) const { return claims_prefix_ + std::string(node_id); }
  // The range a node watches: the election key and the log.
  const std::string& watch_begin() const { return leader_; }
  std::string watch_end() const;

 private:
  std::string prefix_, leader_, log_prefix_, snapshot_, chunks_prefix_, incarnation_, cluster_, claims_prefix_;
};

// Whether a prefix is usable: 1 to 200 bytes of printable ASCII without
// space. `error` says why not.
bool valid_prefix(std::string_view prefix, std::string& error);

struct SnapshotPointer {
  std::uint64_t index = 0;
  std::uint64_t bytes = 0;
  std::uint32_t chunks = 0;
  std::uint64_t hash = 0;
  friend bool operator==(const SnapshotPointer&, const SnapshotPointer&) = default;
};
std::string encode_pointer(const SnapshotPointer& pointer);
std::optional<SnapshotPointer> decode_pointer(std::string_view bytes, std::string& error);

// What the election key holds: who leads, and where its clients connect.
struct LeaderRecord {
  std::string node_id;
  std::string advertise;  // host:port
  friend bool operator==(const LeaderRecord&, const LeaderRecord&) = default;
};
std::string encode_leader(const LeaderRecord& record);
std::optional<LeaderRecord> decode_leader(std::string_view bytes);

// A node id: 1 to 64 printable bytes without space.
bool valid_node_id(std::string_view id);
// A member's address: host:port with a port in 1..65535, printable ASCII.
bool valid_member_address(std::string_view address);

// A cluster's identity and membership (P/cluster).
struct Member {
  std::string node_id;
  std::string advertise;  // host:port, where clients reach it
  friend bool operator==(const Member&, const Member&) = default;
};
inline constexpr std::size_t members_max = 64;
struct Membership {
  std::string cluster_id;  // 16 hex digits, drawn at init
  std::vector<Member> members;
  friend bool operator==(const Membership&, const Membership&) = default;
};
std::string encode_membership(const Membership& membership);
std::optional<Membership> decode_membership(std::string_view bytes, std::string& error);
// `n1=host:port,n2=host:port,...` (the command line's form); nothing and
// `error` set when it is not that, or its members are not valid together.
std::optional<std::vector<Member>> parse_members(std::string_view text, std::string& error);
// 1 to members_max members, valid ids and addresses, no id or address twice.
std::optional<std::string> check_members(const std::vector<Member>& members);
const Member* find_member(const Membership& membership, std::string_view node_id);
// `n1 127.0.0.1:7001, n2 ...`, for messages.
std::string describe_members(const std::vector<Member>& members);

// The claim of a running node on its id (P/node/<id>).
struct ClaimRecord {
  std::string node_id;
  std::string advertise;
  std::int64_t ttl_s = 0;  // its lease's TTL, which bounds how long it outlives its process
  std::string owner;       // <pid>@<host name>
  friend bool operator==(const ClaimRecord&, const ClaimRecord&) = default;
};
std::string encode_claim(const ClaimRecord& record);
std::optional<ClaimRecord> decode_claim(std::string_view bytes);

std::uint64_t fnv1a_64(std::string_view bytes);

}  // namespace lockstep::etcd
