// lockstep's two requests carried out with the common lock of a single
// Redis instance (a driver: blocking hiredis calls, run on the adapter's
// worker threads, one request per thread, each on a connection of a pool).
//
// Acquire `A <key> <owner> <lease_ms> <wait_ms>`:
// 1. draw a value, a random 64-bit number (not 0): unique to this acquire,
//    as the recipe asks, so that only its holder can release;
// 2. `SET <prefix>:<key> <value> NX PX <lease_ms>`: set if absent, with the
//    lease in milliseconds as the key's expiry. OK: granted, the value is
//    the token. Redis ends the lease itself: the key expires. (With
//    `--tokens counter`, a script does it on a free key with the next
//    number of the counter `<prefix>/tokens` as the value and the token:
//    INCR and SET in one step, so that tokens rise in the order of grants);
// 3. otherwise, with a zero wait, `T` at once; with a wait, the acquire
//    takes a waiter slot (`B` when there is none) and tries the SET again
//    until it succeeds or the wait, counted from the first SET's answer, is
//    over (`T`): every `poll_ms` (`--wait poll`), or each time Redis
//    publishes that the key was deleted or expired (`--wait notify`: a
//    connection of its own subscribed to the key's keyspace channel before
//    the first SET, so that no deletion is missed; Redis must have
//    notify-keyspace-events with K, g and x). Redis keeps no queue: the
//    waiter that tries first after the key is free takes it, and so may a
//    new acquire.
// A connection that closes stops its waiters' tries (nothing is left in
// Redis: a waiter has no trace there).
//
// Release `R <key> <token>`: the compare-and-delete script, in one step on
// the server (EVAL): `if GET key == token then DEL key (R) else N`.
//
// A call that fails (Redis gone, a connection broken) is made again on a
// new connection, every `retry_pause`, until Redis answers or the adapter
// stops. A SET whose answer was lost may have been made: when the next try
// finds the key held, a GET tells whether by this acquire's own value. A
// release whose answer was lost and whose next try finds the key no longer
// its own cannot tell whether it deleted the key: `lost`, which the adapter
// reports by closing the connection unanswered.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "adapters/common/lock_service.hpp"
#include "impl/prng.hpp"

struct redisContext;
struct redisReply;

namespace lockstep::redis_lock {

enum class WaitBy { poll, notify };
// Where a grant's token comes from: the random value of the recipe, or a
// counter that one script increments and sets as the value in one step
// (INCR and SET NX PX): a fencing token, within one Redis instance.
enum class TokensFrom { random, counter };

struct RedisLockConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::string prefix = "lockstep-redis-lock";
  std::chrono::milliseconds call_timeout{5'000};
  std::chrono::milliseconds retry_pause{100};
  WaitBy wait_by = WaitBy::poll;
  TokensFrom tokens = TokensFrom::random;
  std::chrono::milliseconds poll{20};
  std::uint64_t idle_connections_max = 64;  // kept open between requests
};

// `<prefix>:<key>`: the Redis key of a lockstep key. Keys are flat in
// Redis, so nothing needs escaping.
std::string redis_key(const std::string& prefix, const std::string& key);
// The channel Redis publishes the key's events on (database 0).
std::string keyspace_channel(const std::string& redis_key);
// The counter of `--tokens counter`, outside every lock's key.
std::string counter_key(const std::string& prefix);
// The release script, the recipe's compare-and-delete.
extern const char* const release_script;
// `--tokens counter`'s acquire: on a free key, the next number of the
// counter set as its value with the lease; that number, or 0 when held.
extern const char* const take_with_counter_script;

class RedisLock : public adapters::LockService {
 public:
  explicit RedisLock(RedisLockConfig config);
  ~RedisLock() override;

  std::optional<std::string> start() override;
  std::string describe() const override;
  adapters::AcquireOutcome acquire(const adapters::AcquireAsk& ask, adapters::WaiterSlots& slots,
                                   adapters::Cancellation& cancel, const std::function<void()>& placed) override;
  adapters::ReleaseOutcome release(const std::string& key, std::uint64_t token) override;
  void stop() override { stopping_ = true; }
  std::string figures() const override;

 private:
  struct ReplyDeleter {
    void operator()(redisReply* reply) const;
  };
  using Reply = std::unique_ptr<redisReply, ReplyDeleter>;
  // A reply to `words`, made again on a new connection until Redis answers
  // (with anything but an error) or the adapter stops (nothing).
  // `may_have_applied` is set when an attempt was sent and its answer lost.
  Reply call(const std::vector<std::string>& words, bool* may_have_applied = nullptr);
  // One acquire's tries: its Redis key, its value (random tokens), its
  // lease, and the token once it holds.
  struct Attempt {
    std::string key, value;
    std::int64_t lease_ms = 1;
    std::uint64_t token = 0;
  };
  // One try to take the key: taken, held by another, held maybe by an
  // earlier try of its own whose answer was lost (counter tokens: lost),
  // or the adapter stopped.
  enum class Taken { yes, no, lost, stopped };
  Taken try_take(Attempt& attempt);
  redisContext* connect(std::string* error = nullptr) const;
  redisContext* take_connection();
  void give_back(redisContext* context);
  std::uint64_t draw_value();

  // The wait for a turn, by polling or by the key's events.
  enum class Turn { holds, timed_out, dropped, lost, abandoned };
  // A try's turn, or nothing when the key is another's (wait on).
  std::optional<Turn> turn_after_try(Attempt& attempt);
  Turn wait_polling(Attempt& attempt, std::chrono::steady_clock::time_point deadline, adapters::Cancellation& cancel);
  // `subscriber` is replaced when its subscription breaks.
  Turn wait_notified(redisContext*& subscriber, Attempt& attempt, std::chrono::steady_clock::time_point deadline,
                     adapters::Cancellation& cancel);
  // The messages of one subscription until a turn is decided, or nothing
  // when the subscription broke.
  std::optional<Turn> listen(redisContext* subscriber, Attempt& attempt, std::chrono::steady_clock::time_point deadline,
                             adapters::Cancellation& cancel);
  // A subscriber of the key's channel, confirmed, or nothing.
  redisContext* subscribe(const std::string& key);

  const RedisLockConfig config_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> retried_{0};
  std::mutex mutex_;  // the pool and the generator
  std::vector<redisContext*> idle_;
  std::optional<Prng> values_;
};

}  // namespace lockstep::redis_lock
