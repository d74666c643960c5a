// The simple-mode lock engine: deterministic, single-threaded and sans-IO.
//
// A driver (the TCP server, the simulator, a vector runner) owns sockets and
// clocks; it calls the engine with each input and the current instant, and
// sends the responses the engine appends to an Outputs vector, in that
// order. The engine never reads a clock, never allocates without a limit and
// holds no IO.
//
// Order within one instant (docs/protocol.md, "Time"): every call first fires
// what is due at instants up to `now` (wait timeouts, then the sweep, instant
// by instant), then handles its own input. Time never goes back.
//
// Costs: a request is amortized O(1) plus O(log B) to find its timer bucket,
// where B is the number of distinct pending instants (at most
// max_lease_ms / sweep_ms sweep buckets, and one bucket per distinct wait
// deadline). A sweep visits only the keys that expire at it: keys are kept in
// buckets by the sweep instant at which they expire.
//
// Tokens: issued consecutively from Config::first_token. token_mark() is a
// bound on every token issued so far; a driver that must keep tokens unique
// across restarts persists token_mark() whenever it grows, before it sends
// the responses of that call, and starts the next engine at mark + 1. The
// mark moves in blocks of Config::token_block, so persisting is rare.
//
// Tokens run out at 2^64 - 1 (docs/protocol.md, "Tokens"). Once that token
// is issued, every acquire is answered `E tokens exhausted` and changes
// nothing; releases are still served. A waiter whose turn comes (a release
// or a sweep would hand it the key) cannot be given a token: the key's
// waiters are all answered `T`, in queue order, and the key is deleted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "impl/bugs.hpp"
#include "impl/compact_string.hpp"
#include "impl/counters.hpp"
#include "impl/key_index.hpp"
#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "impl/slab.hpp"
#include "impl/units.hpp"

namespace lockstep {

// What the engine has done, for summaries and benchmarks. Never read by the
// engine's own logic.
struct EngineCounters {
  std::uint64_t requests = 0;
  std::uint64_t malformed = 0;
  std::uint64_t grants = 0;          // A at once on a free key
  std::uint64_t takeovers = 0;       // A at once on an expired key (lazy expiry)
  std::uint64_t handoffs = 0;        // A to the head waiter on release
  std::uint64_t sweep_handoffs = 0;  // A to the head waiter by the sweep
  std::uint64_t queued = 0;
  std::uint64_t timeouts = 0;  // T at a waiter's deadline
  std::uint64_t refused = 0;   // T at once (wait 0 on a held key)
  std::uint64_t busy = 0;
  std::uint64_t releases = 0;
  std::uint64_t not_held = 0;
  std::uint64_t sweeps = 0;          // sweeps that found at least one expired key
  std::uint64_t sweep_deletions = 0;
  std::uint64_t dropped_waiters = 0;  // waiters of closed connections
  std::uint64_t exhausted = 0;  // acquires answered E and waiters answered T: no token left
};

// The engine's counters, each once, with its summary label (impl/counters.hpp).
inline constexpr std::array<Counter<EngineCounters>, 16> engine_counters{{
    {"requests", &EngineCounters::requests},
    {"malformed", &EngineCounters::malformed},
    {"grants", &EngineCounters::grants},
    {"takeovers", &EngineCounters::takeovers},
    {"hand-offs (release)", &EngineCounters::handoffs},
    {"hand-offs (sweep)", &EngineCounters::sweep_handoffs},
    {"queued", &EngineCounters::queued},
    {"timeouts", &EngineCounters::timeouts},
    {"try-locks refused", &EngineCounters::refused},
    {"busy", &EngineCounters::busy},
    {"releases", &EngineCounters::releases},
    {"not held", &EngineCounters::not_held},
    {"sweeps", &EngineCounters::sweeps},
    {"sweep deletions", &EngineCounters::sweep_deletions},
    {"waiters dropped", &EngineCounters::dropped_waiters},
    {"tokens exhausted", &EngineCounters::exhausted},
}};
static_assert(lists_every_counter(engine_counters), "a counter of EngineCounters is missing from engine_counters");

// What a key looks like from outside, for tools and failure reports.
struct KeyView {
  Token token;
  TimeMs expiry;
  struct Waiter {
    std::string owner;
    DurationMs lease_ms;
    TimeMs deadline;
    ConnectionId connection;
  };
  std::vector<Waiter> queue;
};

class Engine {
 public:
  struct Config {
    Limits limits;
    Token first_token{1};
    std::uint64_t token_block = std::uint64_t{1} << 20;
    InjectedBug bug = InjectedBug::none;
  };

  // Throws std::invalid_argument when the configuration is not valid.
  explicit Engine(Config config);

  // Handles one request line (without its `\n`) received on `connection`.
  // A malformed line is answered `E` and changes nothing; a line longer than
  // max_line_bytes also asks the driver to close the connection.
  LineOutcome on_line(ConnectionId connection, std::string_view line, TimeMs now, Outputs& out);
  // Handles one parsed request. Its key and owner must be valid names and its
  // durations within the limits (parse_request guarantees both).
  void on_request(ConnectionId connection, const Request& request, TimeMs now, Outputs& out);
  // The connection closed: its waiters are dropped without an answer.
  void on_close(ConnectionId connection, TimeMs now, Outputs& out);
  // Fires everything due at instants up to `now`.
  void advance(TimeMs now, Outputs& out);

  // The next instant at which something is due, if anything is.
  std::optional<TimeMs> next_due() const;
  TimeMs now() const { return now_; }
  Token token_mark() const { return token_mark_; }
  // The last token (2^64 - 1) was issued: no grant is possible any more.
  bool tokens_exhausted() const { return tokens_exhausted_; }
  const Limits& limits() const { return config_.limits; }
  const EngineCounters& counters() const { return counters_; }
  std::size_t key_count() const { return keys_.live(); }
  std::size_t waiter_count() const { return waiters_.live(); }
  std::optional<KeyView> view(std::string_view key) const;

  // Checks every internal invariant in O(keys + waiters); throws
  // InvariantViolation on the first that fails. For tests and the simulator.
  void check_invariants() const;

 private:
  // Waiters wait in deadline buckets, one per instant; an index maps each
  // instant to its bucket's slot, in time order. Records name their bucket by
  // a 4-byte slot rather than an 8-byte map iterator.
  struct Bucket {
    TimeMs instant;
    ListHead list;
  };
  using Buckets = std::map<TimeMs, Slot>;

  // Keys wait in sweep buckets, one per sweep instant, each a vector of key
  // slots in grant order (token order: the order in which the contract's
  // sweep visits expired keys). A key that leaves its bucket early (a
  // release, a takeover) has its entry marked dead in place, so leaving
  // touches no other key's record: a doubly linked list touched two, each a
  // likely cache miss among a million keys. A record finds its bucket from
  // its own expiry. When dead entries outnumber the live ones by more than
  // compact_slack, the vector is compacted, so a bucket holds at most about
  // twice its live keys.
  static constexpr std::uint32_t compact_slack = 64;
  static constexpr std::uint32_t not_in_bucket = UINT32_MAX;
  struct SweepBucket {
    std::vector<Slot> keys;  // no_slot marks a dead entry
    std::uint32_t live = 0;
  };
  using SweepBuckets = std::map<TimeMs, SweepBucket>;

  // With a 16-byte name, a held key's record is 48 bytes.
  struct KeyRecord {
    CompactString key;
    Token token;
    TimeMs expiry;
    ListHead queue;  // its waiters, oldest first
    std::uint32_t waiter_count = 0;
    std::uint32_t bucket_pos = not_in_bucket;  // its entry in the sweep bucket of its expiry
  };
  static_assert(sizeof(KeyRecord) == 48, "a held key's record grew: bench engine's bytes per key moves with it");

  // The key text of a record, for the index (a type, so that lookups inline).
  struct KeyOfRecord {
    const Slab<KeyRecord>* keys;
    std::string_view operator()(Slot slot) const { return (*keys)[slot].key.view(); }
  };

  struct WaiterRecord {
    CompactString owner;
    DurationMs lease_ms;
    TimeMs deadline;
    ConnectionId connection;
    Slot key = no_slot;
    Links queue_links;       // in its key's queue
    Links deadline_links;    // in the bucket of its deadline
    Links connection_links;  // in its connection's list
    Slot bucket = no_slot;   // its deadline bucket
  };

  void acquire(ConnectionId connection, const AcquireRequest& request, Outputs& out);
  void release(ConnectionId connection, const ReleaseRequest& request, Outputs& out);
  void fire_due(TimeMs through, Outputs& out);
  void fire_instant(TimeMs instant, Outputs& out);
  void fire_timeouts(TimeMs instant, Outputs& out);
  void sweep(TimeMs instant, Outputs& out);
  // One expired key of a sweep: deleted, or handed to its head waiter.
  void sweep_key(Slot key, TimeMs instant, Outputs& out);
  // The injected bugs that visit a sweep's keys in another order than
  // their holders' tokens.
  void sweep_out_of_order(std::vector<Slot> order, TimeMs instant, Outputs& out);
  // Takes the bucket at `instant` out of the index; its live keys, in order.
  std::vector<Slot> detach_sweep_bucket(SweepBuckets::iterator bucket);

  Slot register_key(std::string_view key);
  void delete_key(Slot key);
  void grant(Slot key, std::string_view owner, DurationMs lease_ms, ConnectionId connection,
             Outputs& out);
  void hand_to_waiter(Slot key, Slot waiter, Outputs& out);
  void refuse_waiters(Slot key, Outputs& out);
  void enqueue(Slot key, ConnectionId connection, const AcquireRequest& request);
  void remove_waiter(Slot waiter);
  Token issue_token(Slot key);

  TimeMs sweep_instant_for(TimeMs expiry) const;
  Slot deadline_bucket_at(TimeMs instant);
  void drop_deadline_bucket_if_empty(Slot bucket);
  void link_sweep_bucket(Slot key);
  void unlink_sweep_bucket(Slot key);
  void compact_sweep_bucket(SweepBucket& bucket);

  bool bug(InjectedBug which) const { return config_.bug == which; }

  Config config_;
  TimeMs now_{0};
  Token next_token_;
  Token token_mark_;
  bool tokens_exhausted_ = false;  // next_token_ was the last one and is issued

  Slab<KeyRecord> keys_;
  Slab<WaiterRecord> waiters_;
  Slab<Bucket> buckets_;  // deadline buckets
  KeyIndex<KeyOfRecord> index_;
  SweepBuckets sweep_buckets_;  // sweep instant -> keys that expire at it, in token order
  Buckets deadline_buckets_;    // deadline -> waiters due then, in queue order
  std::unordered_map<ConnectionId, ListHead> connection_waiters_;
  EngineCounters counters_;

  // State that only injected bugs use; empty in a correct engine.
  struct BugState {
    std::unordered_map<std::string, std::uint64_t> token_per_key;
    std::unordered_map<Slot, std::string> holder_owner;
    std::unordered_map<Slot, Token> previous_token;
    std::multimap<TimeMs, Outbound> late_answers;
  } bug_state_;
};

}  // namespace lockstep
