// The replicated lock table of cluster mode (docs/protocol.md, "Cluster mode"):
// what the committed log drives, one per node (cluster::Node feeds it).
//
// Applying a command reads no clock: the instant it uses is the one stamped
// in the command, raised to the latest instant applied so far (the table's
// `clock`), so that time in the replicated state never goes back even when a
// new leader's clock is behind the old one's (LogCabin's cluster time).
//
// Rules that differ from simple mode, all from the contract:
// - a key is never taken over in place: until an Expire with its holder's
//   token is applied, the key is held, however late; an A on it queues, or is
//   T (wait 0) or B (a waiter limit), as on any held key;
// - Expire(key, token) with the holder's token hands the key to the head
//   waiter (new token, lease from the Expire's instant) or deletes the key;
//   with any other token it does nothing;
// - Timeout(key, waiter) answers that waiter T if it is still queued;
// - there is no sweep; R, FIFO hand-off, T, B, the limits and Close are as in
//   simple mode.
// One rule the contract implies and this table states: a hand-off (by R or
// Expire) never grants a waiter whose deadline is at or before the instant;
// such waiters are answered T first, in queue order, as their Timeout would
// have (which then finds nothing to do).
//
// No ghost grants (docs/protocol.md, "Cluster nodes on the wire", "Waiters
// and leader changes"). A waiter is attached to the leadership (epoch) that
// proposed the command that queued it, or the retry that last moved it: the
// node of that leadership holds its connection, and closes it when it stops
// leading. The table's epoch is the highest epoch of a command it applied;
// the first command of a newer epoch detaches every waiter of an older one,
// at that command's instant (`detached_at`). A detached waiter is never
// granted: a hand-off drops it silently, as a Close would (its session
// records `T` for a retry). A retry of its session under the table's epoch
// attaches it again (its place and deadline kept). A Timeout drops a
// detached waiter silently too: the leader proposes it `waiter_grace_ms`
// after the detachment (deadlines(): a detached waiter is due at the earlier
// of its deadline and detached_at + waiter_grace_ms), which is the only use
// of the grace here: applying a command does not depend on it.
//
// Outputs: every apply returns what it produced, in this order of use by
// the node:
//   1. `responses`: the lines to send, each to its connection. A node sends
//      those addressed to connections it owns, and only now: after commit and
//      apply (docs/protocol.md: an A a client saw survives a minority of crashes);
//   2. `deadlines`: the holder expiries and waiter deadlines this command
//      created, for the leader's DeadlineHeap;
//   3. `settled`: the deadlines the applied Expires and Timeouts were
//      proposed for, whatever they did, so the heap stops tracking them as
//      in flight.
// Connection ids must be unique across the cluster (the driver's choice,
// e.g. the node id in the high bits): the table addresses by them only.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "impl/cluster/bugs.hpp"
#include "impl/cluster/commands.hpp"
#include "impl/cluster/sessions.hpp"
#include "impl/compact_string.hpp"
#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "impl/raft/types.hpp"
#include "impl/units.hpp"

namespace lockstep::cluster {

// Version 3: the table's epoch, each waiter's epoch and detachment, and the
// digest of each session's request (version 2: string client ids and the
// count of applied commands).
inline constexpr std::uint8_t snapshot_format_version = 3;

// What a deadline is for: an Expire of `key` with token `id`, or a Timeout of
// waiter `id` on `key`. Ordered so that, at one instant, timeouts come before
// expiries, timeouts in queueing order and expiries in token order
// (docs/protocol.md, "Cluster semantics in conformance vectors").
struct DeadlineTarget {
  enum class Kind : std::uint8_t { timeout = 0, expire = 1 };
  Kind kind = Kind::timeout;
  std::uint64_t id = 0;
  std::string key;
  // Written out: the libc++ of emscripten (the web preset) has no <=> on
  // std::string, so a defaulted one would be deleted there.
  friend std::strong_ordering operator<=>(const DeadlineTarget& a, const DeadlineTarget& b) {
    if (const auto order = a.kind <=> b.kind; order != 0) return order;
    if (const auto order = a.id <=> b.id; order != 0) return order;
    return a.key.compare(b.key) <=> 0;
  }
  friend bool operator==(const DeadlineTarget&, const DeadlineTarget&) = default;
};

struct Deadline {
  TimeMs at;
  DeadlineTarget target;
  friend auto operator<=>(const Deadline&, const Deadline&) = default;
};

// The command that acts on a deadline, stamped `now`.
Command command_for(const DeadlineTarget& target, TimeMs now);
// The deadline an Expire or Timeout acts on; nothing for other commands.
std::optional<DeadlineTarget> deadline_target(const Command& command);

struct Applied {
  Outputs responses;
  std::vector<Deadline> deadlines;
  std::vector<DeadlineTarget> settled;
};

// How long a waiter detached by a leader change stays for a retry to
// attach it again: 0 .. waiter_grace_max.
inline constexpr DurationMs waiter_grace_default{5'000};
inline constexpr DurationMs waiter_grace_max{86'400'000};

struct MachineConfig {
  Limits limits;
  SessionLimits sessions;
  Token first_token{1};
  ClusterBug bug = ClusterBug::none;
  // When the leader drops a detached waiter (deadlines() only; replicas with
  // different graces still apply alike).
  DurationMs waiter_grace_ms = waiter_grace_default;
};

class LockMachine {
 public:
  struct Waiter {
    WaiterId id;
    std::string owner;
    DurationMs lease_ms;
    TimeMs deadline;
    ConnectionId connection;
    Session session;
    std::uint64_t epoch = 0;              // the leadership it is attached to
    std::optional<TimeMs> detached_at;    // when a newer leadership's first command was applied
    friend bool operator==(const Waiter&, const Waiter&) = default;
  };
  // A key's waiters by id; ids grow in queueing order, so this is FIFO. Most
  // held keys have no waiter: the map is allocated while one waits and freed
  // with the last, so an idle key's queue is one pointer, not an empty
  // std::map's 48 bytes. It reads as a std::map; an empty queue's iterators
  // are those of one shared empty map, and nothing is ever inserted there.
  class WaiterQueue {
   public:
    using Map = std::map<WaiterId, Waiter>;
    WaiterQueue() = default;
    WaiterQueue(const WaiterQueue& other) : map_(other.empty() ? nullptr : std::make_unique<Map>(*other.map_)) {}
    WaiterQueue& operator=(const WaiterQueue& other) {
      if (this != &other) map_ = other.empty() ? nullptr : std::make_unique<Map>(*other.map_);
      return *this;
    }
    WaiterQueue(WaiterQueue&&) noexcept = default;
    WaiterQueue& operator=(WaiterQueue&&) noexcept = default;

    bool empty() const { return map_ == nullptr; }
    std::size_t size() const { return map_ ? map_->size() : 0; }
    bool contains(WaiterId id) const { return map_ && map_->contains(id); }
    Map::iterator begin() { return map().begin(); }
    Map::iterator end() { return map().end(); }
    Map::const_iterator begin() const { return map().begin(); }
    Map::const_iterator end() const { return map().end(); }
    Map::reverse_iterator rbegin() { return map().rbegin(); }
    Map::const_reverse_iterator rbegin() const { return map().rbegin(); }
    Map::iterator find(WaiterId id) { return map().find(id); }
    Map::const_iterator find(WaiterId id) const { return map().find(id); }
    // Throws std::out_of_range when `id` is not queued, as std::map::at.
    Waiter& at(WaiterId id) { return map().at(id); }
    const Waiter& at(WaiterId id) const { return map().at(id); }
    template <class... Args>
    std::pair<Map::iterator, bool> emplace(Args&&... args) {
      if (!map_) map_ = std::make_unique<Map>();
      return map_->emplace(std::forward<Args>(args)...);
    }
    // Erases a queued waiter; the map goes with the last one.
    void erase(Map::iterator at) {
      map_->erase(at);
      if (map_->empty()) map_.reset();
    }
    friend bool operator==(const WaiterQueue& a, const WaiterQueue& b) {
      return a.empty() ? b.empty() : !b.empty() && *a.map_ == *b.map_;
    }

   private:
    static Map& no_waiters() {
      static Map empty;
      return empty;
    }
    Map& map() { return map_ ? *map_ : no_waiters(); }
    const Map& map() const { return map_ ? *map_ : no_waiters(); }

    std::unique_ptr<Map> map_;  // null when no one waits, never empty
  };

  // A held key: 96 bytes with its map node when its name and its holder's
  // are short (bench cluster's `bytes per held key`).
  struct KeyState {
    CompactString owner;
    Token token;
    TimeMs granted_at;
    TimeMs expiry;
    WaiterQueue queue;
    friend bool operator==(const KeyState&, const KeyState&) = default;
  };
  static_assert(sizeof(KeyState) == 48, "a held key grew: bench cluster's bytes per held key moves with it");
  // Keys by name, found by any text without a copy; at() too (std::map's
  // takes only the key type). Throws std::out_of_range as std::map::at.
  class Keys : public std::map<CompactString, KeyState, TextLess> {
   public:
    const KeyState& at(std::string_view key) const {
      const auto found = find(key);
      if (found == end()) throw std::out_of_range("no such key");
      return found->second;
    }
  };

  // Throws std::invalid_argument when the configuration is not valid.
  explicit LockMachine(MachineConfig config);

  // Applies one command of log entry `index`: above every index applied, or
  // equal to the last when one entry holds several commands.
  Applied apply_command(const Command& command, raft::Index index);
  // An entry that holds no command (a no-op), or that did not decode
  // (`rejected`, counted in rejected_entries()): only the applied index
  // moves.
  void skip_entry(raft::Index index, bool rejected);

  // The whole state at applied(): keys, queues, the clock, the counters and
  // the sessions, in a versioned encoding.
  std::string snapshot() const;
  // Replaces the state with a snapshot's, taken at `index`. Throws
  // std::invalid_argument on bytes that do not decode or break an
  // invariant; the table is then unchanged.
  void restore(raft::Index index, std::string_view bytes);

  // What the deadline heap validates against.
  bool holds(std::string_view key, Token token) const;
  bool is_queued(std::string_view key, WaiterId waiter) const;
  // When a queued waiter is due for its Timeout: its deadline, or, detached,
  // the earlier of that and detached_at + waiter_grace_ms. Nothing when it
  // is not queued.
  std::optional<TimeMs> waiter_due(std::string_view key, WaiterId waiter) const;
  TimeMs due_at(const Waiter& waiter) const;
  // Every pending deadline of the applied state: what a new leader's heap is
  // rebuilt from. In key order, then queue order.
  std::vector<Deadline> deadlines() const;

  raft::Index applied() const { return applied_; }
  // Commands applied since the table began: the sessions' LRU stamp.
  std::uint64_t commands_applied() const { return commands_applied_; }
  // The connection has waiters queued (a Close would drop them).
  bool has_waiters(ConnectionId connection) const { return connection_waiters_.contains(connection); }
  TimeMs clock() const { return clock_; }
  // The highest epoch of a command applied: waiters of an older one are
  // detached.
  std::uint64_t epoch() const { return epoch_; }
  // The token the next grant takes; 0 once the last token, 2^64 - 1, was
  // issued: then acquires are E and waiters whose turn comes are T.
  Token next_token() const { return next_token_; }
  bool tokens_exhausted() const { return next_token_.value == 0; }
  const Keys& keys() const { return keys_; }
  std::size_t waiter_count() const { return waiter_keys_.size(); }
  std::uint64_t rejected_entries() const { return rejected_entries_; }
  const SessionTable& sessions() const { return sessions_; }
  const MachineConfig& config() const { return config_; }

  // Checks every invariant of the table in O(keys + waiters + sessions);
  // throws InvariantViolation on the first that fails.
  void check_invariants() const;

 private:
  void acquire(const Acquire& command, Applied& applied);
  void release(const Release& command, Applied& applied);
  void expire(const Expire& command, Applied& applied);
  void timeout(const Timeout& command, Applied& applied);
  void close(const Close& command);

  // Before a request with a session is applied: true when its session
  // answers it (a retry, from its outcome) or refuses it (a number reused
  // for another request, or below the window), and it is done.
  bool answered_by_session(const Session& session, ConnectionId connection, std::uint64_t epoch,
                           std::uint64_t request, bool acquire, Applied& applied);
  void answer_retry(ConnectionId connection, std::uint64_t epoch, const Outcome& outcome, Applied& applied);
  // A command of `epoch` is applied: a newer one detaches every waiter of an
  // older epoch at the table's clock.
  void note_epoch(std::uint64_t epoch, Applied& applied);
  // The waiter is attached to `epoch` (detached if that is older than the
  // table's), and the heap told if that moves when it is due.
  void attach(Waiter& waiter, std::uint64_t epoch, std::string_view key, Applied& applied);
  // A detached waiter leaves silently, as a Close drops it.
  void drop_detached(KeyState& state, std::string_view key, WaiterId waiter);
  Outcome try_acquire(const Acquire& command, Applied& applied);
  void grant(KeyState& state, std::string_view key, std::string_view owner, DurationMs lease_ms,
             ConnectionId connection, Applied& applied);
  // The holder's lock ends: the next waiter still within its deadline gets
  // the key, or the key is deleted. `newest_first` is the
  // lifo-expire-handoff bug's order.
  void hand_on(std::string_view key, Applied& applied, bool newest_first = false);
  void remove_waiter(KeyState& state, WaiterId waiter);
  // The state of a key known to be registered.
  KeyState& key_state(std::string_view key);
  void move_waiter(WaiterId waiter, ConnectionId connection, std::uint64_t epoch, Applied& applied);
  Token issue_token();

  bool bug(ClusterBug which) const { return config_.bug == which; }

  MachineConfig config_;
  raft::Index applied_ = 0;
  std::uint64_t commands_applied_ = 0;
  TimeMs clock_{0};
  std::uint64_t epoch_ = 0;
  Token next_token_;
  WaiterId next_waiter_{1};
  Keys keys_;
  std::map<WaiterId, std::string> waiter_keys_;                    // every waiter -> its key
  std::map<ConnectionId, std::set<WaiterId>> connection_waiters_;  // for Close
  SessionTable sessions_;
  std::uint64_t rejected_entries_ = 0;  // diagnostics only: not in the snapshot
};

// The lock table as canonical text, for comparing it with the reference
// model (model/cluster_model.hpp, which writes the same text): one line per
// key in key order, `key K holder O token N granted_at T expiry T`, each
// followed by one line per waiter in queue order,
// `  waiter ID owner O lease L deadline T connection C epoch E` and, for a
// detached waiter, ` detached T`. Sessions, the clock, the table's epoch and
// the counters are not part of it.
std::string canonical_table(const LockMachine& machine);

}  // namespace lockstep::cluster
