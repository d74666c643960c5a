// The reference model of cluster mode's lock table: a plain sequential
// reading of docs/protocol.md, "Cluster mode" and "Cluster semantics in
// conformance vectors", written apart from impl/cluster/lock_machine.cpp so
// that the two can be checked against each other (a vector run on each, a
// property over random commands, the simulator's checker).
//
// It applies committed commands one at a time, in log order. The rules:
// - the instant a command acts at is its stamp raised to the latest instant
//   applied (time in the replicated state never goes back);
// - A on a free key: granted (B if max_keys keys exist); on a held key, held
//   until its Expire however late: wait 0 is T, a full queue B, else the
//   waiter joins the tail with deadline instant + wait;
// - R with the holder's token: R, then the key passes on; any other: N;
// - Expire with the holder's token: the key passes on; any other: nothing;
// - Timeout of a queued waiter: T; of anything else: nothing;
// - Close: the connection's waiters leave, silently;
// - passing a key on: waiters whose deadline has come (instant >= deadline)
//   cannot be granted and are answered T, head first; the first one still
//   waiting gets the key (new token, its lease from the instant); with none
//   left the key is deleted.
// Leader changes (docs/protocol.md, "Waiters and leader changes"): every
// command names the leadership (epoch) that proposed it; the model's epoch
// is the highest it applied.
// - a waiter belongs to the epoch of the command that queued it, or of the
//   retry that last found it queued; when the model's epoch passes it, it is
//   detached (since that command's instant): its client's connection is gone;
// - a detached waiter is never granted: passing a key on drops it silently,
//   before anything else is looked at, and so does a Timeout of it;
// - a retry of its request under the model's epoch attaches it again, in its
//   place, with its deadline.
// Waiters are numbered 1, 2, ... in the order they are queued, over the whole
// table: Timeout commands name them by that number.
// Sessions (docs/protocol.md, "Cluster nodes on the wire"), for requests that
// carry one (an anonymous request is applied as it comes):
// - the model remembers, per client, what each of its last `window`
//   sequence numbers came to: answered (the response), still queued (the
//   waiter), or dropped with its closed connection (a retry hears T);
// - a request already remembered is a retry when it asks the same (the
//   same request line but the session fields): not applied again; an
//   answered or dropped one is answered the same on the retry's connection,
//   a queued one moves its waiter to that connection; a request that asks
//   something else under a remembered number is `E session reused for
//   another request`, and nothing changes;
// - a sequence number at or below the client's highest minus `window` that
//   is not remembered is `E stale request`;
// - at most `clients_max` clients are remembered: a new one past that makes
//   the model forget the client whose last request (or retry) came first.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "impl/cluster/commands.hpp"
#include "impl/cluster/sessions.hpp"
#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "impl/units.hpp"

namespace lockstep::model {

class ClusterModel {
 public:
  struct Waiter {
    std::uint64_t id = 0;
    std::string owner;
    DurationMs lease_ms;
    TimeMs deadline;
    ConnectionId connection;
    cluster::Session session;
    std::uint64_t epoch = 0;
    std::optional<TimeMs> detached_at;  // since when it waits for a retry
  };
  struct Key {
    std::string holder;
    Token token;
    TimeMs granted_at;
    TimeMs expiry;
    std::deque<Waiter> queue;  // head first
  };

  explicit ClusterModel(Limits limits, Token first_token = Token{1}, cluster::SessionLimits sessions = {});

  // One committed command, in log order. Returns the responses it
  // produces, in order.
  Outputs apply(const cluster::Command& command);

  // A canonical text of the lock table, identical to
  // cluster::canonical_table(const LockMachine&) for the same state.
  std::string canonical() const;
  // A canonical text of what the sessions remember (per client, its highest
  // sequence number and what each remembered request came to), without the
  // order of use, which decides only which client is forgotten past
  // clients_max. Two models with equal canonical() and canonical_sessions()
  // answer every later command alike (up to that order).
  std::string canonical_sessions() const;
  Token next_token() const { return next_token_; }  // 0 once 2^64 - 1 was issued
  bool tokens_exhausted() const { return next_token_.value == 0; }

  const std::map<std::string, Key>& keys() const { return keys_; }
  TimeMs clock() const { return clock_; }
  std::uint64_t epoch() const { return epoch_; }  // the highest a command carried
  const Limits& limits() const { return limits_; }
  std::size_t waiter_count() const;

 private:
  // What became of a request, as its retry hears it.
  struct Remembered {
    enum class Kind { answered, queued, dropped };
    Kind kind = Kind::answered;
    Response response;        // answered, dropped (the T a retry gets)
    std::uint64_t waiter = 0;  // queued
    std::string request;       // what it asked: `A k o lease wait` or `R k token`
  };
  struct Client {
    std::uint64_t highest = 0;
    std::uint64_t last_use = 0;
    std::map<std::uint64_t, Remembered> requests;  // sequence -> what it came to
  };

  // Session handling before a request: true when the request is done (a
  // retry or stale), with what it answers in `out`.
  bool handled_by_session(const cluster::Command& command, Outputs& out);
  void remember(const cluster::Command& command, Remembered what);
  // A queued waiter was answered or dropped: what its request came to, if
  // the session still remembers that request as this waiter.
  void answered_later(const Waiter& waiter, Remembered what);

  void acquire(const cluster::Acquire& command, Outputs& out);
  void release(const cluster::Release& command, Outputs& out);
  void expire(const cluster::Expire& command, Outputs& out);
  void timeout(const cluster::Timeout& command, Outputs& out);
  void close(const cluster::Close& command);
  void pass_on(const std::string& key, Outputs& out);
  // A command of `epoch` is applied: a newer one detaches the older waiters.
  void see_epoch(std::uint64_t epoch);
  // A waiter belongs to `epoch` now (a retry found it).
  void belong(Waiter& waiter, std::uint64_t epoch);
  Token new_token();

  Limits limits_;
  cluster::SessionLimits session_limits_;
  std::map<std::string, Client> clients_;
  std::uint64_t uses_ = 0;  // requests applied or retried: the order of use
  TimeMs clock_{0};
  std::uint64_t epoch_ = 0;
  Token next_token_;
  std::uint64_t next_waiter_ = 1;
  std::map<std::string, Key> keys_;
};

}  // namespace lockstep::model
