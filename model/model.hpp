// The reference model of simple mode: a deliberately plain sequential state
// machine that follows docs/protocol.md point by point. It is the oracle that the
// engine, the vectors and the simulator are judged against, so it is written
// for a reader, not for speed: ordered maps, whole-state scans, and its own
// request parser (so that a bug in the engine's codec shows up as a
// disagreement instead of being shared). A queue is a plain vector: queues are
// short, and a vector is cheap to copy, which the explorer does for every step.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/bugs.hpp"
#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "impl/units.hpp"

namespace lockstep {

class Model {
 public:
  struct Waiter {
    std::string owner;
    DurationMs lease_ms;
    TimeMs deadline;
    ConnectionId connection;
    std::uint64_t queued_order = 0;  // global queueing order, for same-instant timeouts
    friend bool operator==(const Waiter&, const Waiter&) = default;
  };
  struct Key {
    std::string holder;  // the owner the key was granted to (no special treatment: simple mode 9)
    Token token;
    TimeMs granted_at;
    TimeMs expiry;             // granted_at + lease; expired when now >= expiry
    std::vector<Waiter> queue;  // FIFO, head first
    friend bool operator==(const Key&, const Key&) = default;
  };

  // `bug` may be lifo_handoff or sweep_before_timeouts, so that the checkers
  // built on the model (the explorer) can be shown to catch those two.
  explicit Model(Limits limits, Token first_token = Token{1}, InjectedBug bug = InjectedBug::none);

  LineOutcome on_line(ConnectionId connection, std::string_view line, TimeMs now, Outputs& out);
  // The two requests once read: what on_line does with a well-formed line.
  // The names must be valid and the durations within the limits; the
  // explorer calls these, so that it does not read the same lines again for
  // every step.
  void on_acquire(ConnectionId connection, std::string_view key, std::string_view owner,
                  DurationMs lease_ms, DurationMs wait_ms, TimeMs now, Outputs& out);
  void on_release(ConnectionId connection, std::string_view key, Token token, TimeMs now,
                  Outputs& out);
  void on_close(ConnectionId connection, TimeMs now, Outputs& out);
  void advance(TimeMs now, Outputs& out);
  // The next instant at which a timeout or a sweep is due, if any key or waiter exists.
  std::optional<TimeMs> next_due() const;

  const std::map<std::string, Key>& keys() const { return keys_; }
  TimeMs now() const { return now_; }
  Token next_token() const { return next_token_; }
  // The last token, 2^64 - 1, was issued (docs/protocol.md, "Tokens").
  bool tokens_exhausted() const { return tokens_exhausted_; }
  const Limits& limits() const { return limits_; }
  std::size_t waiter_count() const;

  // Puts the model in a given state: the clock, the next token and the keys
  // with their queues (waiters in queueing order by queued_order). For the
  // explorer, which stores states as its views and rebuilds each to expand it.
  void restore(TimeMs now, Token next_token, std::map<std::string, Key> keys);

  friend bool operator==(const Model&, const Model&) = default;

 private:
  void acquire(ConnectionId connection, std::string_view key, std::string_view owner,
               DurationMs lease_ms, DurationMs wait_ms, Outputs& out);
  void release(ConnectionId connection, std::string_view key, Token token, Outputs& out);
  void fire_timeouts(Outputs& out);
  void sweep(Outputs& out);
  void give_to_head_waiter(const std::string& key, bool from_release, Outputs& out);
  Token new_token();
  void forget_deadline(TimeMs deadline);

  Limits limits_;
  InjectedBug bug_;
  TimeMs now_{0};
  Token next_token_;
  bool tokens_exhausted_ = false;
  std::uint64_t next_queued_order_ = 0;
  std::map<std::string, Key> keys_;
  // Every queued waiter's deadline, so that the next one due and the number
  // of waiters are known without a scan of every key (the simulator asks
  // after each input, with thousands of keys).
  std::multiset<TimeMs> deadlines_;
};

}  // namespace lockstep
