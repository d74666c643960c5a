#include "adapters/redis_lock/redis_lock.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <hiredis/hiredis.h>

namespace lockstep::redis_lock {

namespace {

using Clock = std::chrono::steady_clock;

timeval timeval_of(std::chrono::milliseconds duration) {
  return timeval{static_cast<time_t>(duration.count() / 1000), static_cast<suseconds_t>(duration.count() % 1000 * 1000)};
}

std::string text_of(const redisReply* reply) {
  return reply->str == nullptr ? std::string() : std::string(reply->str, reply->len);
}

}  // namespace

const char* const release_script =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const char* const take_with_counter_script =
    "if redis.call('exists', KEYS[1]) == 1 then return 0 end "
    "local token = redis.call('incr', KEYS[2]) "
    "redis.call('set', KEYS[1], token, 'PX', ARGV[1]) "
    "return token";

std::string redis_key(const std::string& prefix, const std::string& key) { return prefix + ":" + key; }

std::string counter_key(const std::string& prefix) { return prefix + "/tokens"; }

std::string keyspace_channel(const std::string& redis_key) { return "__keyspace@0__:" + redis_key; }

void RedisLock::ReplyDeleter::operator()(redisReply* reply) const { freeReplyObject(reply); }

RedisLock::RedisLock(RedisLockConfig config) : config_(std::move(config)) {}

RedisLock::~RedisLock() {
  for (auto* context : idle_) redisFree(context);
}

redisContext* RedisLock::connect(std::string* error) const {
  redisContext* context = redisConnectWithTimeout(config_.host.c_str(), config_.port, timeval_of(config_.call_timeout));
  if (context == nullptr || context->err != 0) {
    if (error != nullptr) *error = context == nullptr ? std::string("out of memory") : std::string(context->errstr);
    if (context != nullptr) redisFree(context);
    return nullptr;
  }
  redisSetTimeout(context, timeval_of(config_.call_timeout));
  return context;
}

redisContext* RedisLock::take_connection() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto* context = idle_.back();
      idle_.pop_back();
      return context;
    }
  }
  return connect();
}

void RedisLock::give_back(redisContext* context) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < config_.idle_connections_max) {
    idle_.push_back(context);
  } else {
    redisFree(context);
  }
}

std::uint64_t RedisLock::draw_value() {
  std::lock_guard lock(mutex_);
  std::uint64_t value = 0;
  while (value == 0) value = values_->next();  // a token is never 0
  return value;
}

RedisLock::Reply RedisLock::call(const std::vector<std::string>& words, bool* may_have_applied) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& word : words) {
    argv.push_back(word.data());
    lengths.push_back(word.size());
  }
  while (true) {
    if (auto* context = take_connection()) {
      Reply reply(static_cast<redisReply*>(
          redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data())));
      if (reply && reply->type != REDIS_REPLY_ERROR) {
        give_back(context);
        return reply;
      }
      if (reply) {
        give_back(context);  // Redis answered, with an error: it applied nothing
      } else {
        if (may_have_applied != nullptr) *may_have_applied = true;
        redisFree(context);  // a broken connection is not used again
      }
    }
    if (stopping_.load()) return nullptr;
    ++retried_;
    std::this_thread::sleep_for(config_.retry_pause);
  }
}

std::optional<std::string> RedisLock::start() {
  std::string error;
  redisContext* context = connect(&error);
  if (context == nullptr) {
    return fmt::format("Redis at {}:{} did not answer within {} ms: {}", config_.host, config_.port,
                       config_.call_timeout.count(), error);
  }
  give_back(context);
  const auto ask = [&](const std::vector<std::string>& words) -> Reply {
    auto* c = take_connection();
    if (c == nullptr) return nullptr;
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& word : words) {
      argv.push_back(word.data());
      lengths.push_back(word.size());
    }
    Reply reply(static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data())));
    if (reply) {
      give_back(c);
    } else {
      redisFree(c);
    }
    return reply;
  };
  const auto pong = ask({"PING"});
  if (!pong || pong->type == REDIS_REPLY_ERROR) {
    return fmt::format("Redis at {}:{} did not answer PING: {}", config_.host, config_.port,
                       pong ? text_of(pong.get()) : std::string("no answer"));
  }
  if (config_.wait_by == WaitBy::notify) {
    const auto events = ask({"CONFIG", "GET", "notify-keyspace-events"});
    const std::string flags = events && events->type == REDIS_REPLY_ARRAY && events->elements == 2
                                  ? text_of(events->element[1])
                                  : std::string();
    const bool all = flags.find('A') != std::string::npos;
    if (flags.find('K') == std::string::npos || (!all && (flags.find('g') == std::string::npos ||
                                                          flags.find('x') == std::string::npos))) {
      return fmt::format(
          "--wait notify needs Redis to publish keyspace events of deletions and expiries, but its "
          "notify-keyspace-events is '{}': start it with --notify-keyspace-events Kgx (or CONFIG SET), or use "
          "--wait poll",
          events && events->type == REDIS_REPLY_ERROR ? text_of(events.get()) : flags);
    }
  }
  // The values must differ from those of any other run: a token is drawn
  // from the operating system's entropy once, then from the generator.
  std::random_device entropy;
  values_.emplace((std::uint64_t{entropy()} << 32) ^ entropy());
  return std::nullopt;
}

std::string RedisLock::describe() const {
  return fmt::format("Redis {}:{} prefix '{}'; {}, waiting by {}", config_.host, config_.port, config_.prefix,
                     config_.tokens == TokensFrom::random
                         ? std::string("SET NX PX with a random value as the token")
                         : fmt::format("SET NX PX with the next number of {} as the token", counter_key(config_.prefix)),
                     config_.wait_by == WaitBy::poll ? fmt::format("polling every {} ms", config_.poll.count())
                                                     : std::string("keyspace notifications"));
}

std::string RedisLock::figures() const { return fmt::format("{} Redis calls made again", retried_.load()); }

RedisLock::Taken RedisLock::try_take(Attempt& attempt) {
  bool may_have_applied = false;
  if (config_.tokens == TokensFrom::counter) {
    const auto taken = call({"EVAL", take_with_counter_script, "2", attempt.key, counter_key(config_.prefix),
                             std::to_string(attempt.lease_ms)},
                            &may_have_applied);
    if (!taken) return Taken::stopped;
    if (taken->type == REDIS_REPLY_INTEGER && taken->integer > 0) {
      attempt.token = static_cast<std::uint64_t>(taken->integer);
      return Taken::yes;
    }
    // Held: by another, or by this acquire if an earlier attempt whose
    // answer was lost took it, with a number it never heard.
    return may_have_applied ? Taken::lost : Taken::no;
  }
  const auto set = call({"SET", attempt.key, attempt.value, "NX", "PX", std::to_string(attempt.lease_ms)},
                        &may_have_applied);
  if (!set) return Taken::stopped;
  if (set->type == REDIS_REPLY_STATUS) return Taken::yes;  // OK
  if (!may_have_applied) return Taken::no;                 // nil: held by another
  // An earlier attempt may have set it: then the value there is its own.
  const auto held = call({"GET", attempt.key});
  if (!held) return Taken::stopped;
  return held->type == REDIS_REPLY_STRING && text_of(held.get()) == attempt.value ? Taken::yes : Taken::no;
}

std::optional<RedisLock::Turn> RedisLock::turn_after_try(Attempt& attempt) {
  switch (try_take(attempt)) {
    case Taken::yes:
      return Turn::holds;
    case Taken::no:
      return std::nullopt;
    case Taken::lost:
      return Turn::lost;
    case Taken::stopped:
      break;
  }
  return Turn::abandoned;
}

adapters::AcquireOutcome RedisLock::acquire(const adapters::AcquireAsk& ask, adapters::WaiterSlots& slots,
                                            adapters::Cancellation& cancel, const std::function<void()>& placed) {
  using Kind = adapters::AcquireOutcome::Kind;
  Attempt attempt{redis_key(config_.prefix, ask.key), {}, ask.lease_ms, 0};
  if (config_.tokens == TokensFrom::random) {
    attempt.token = draw_value();
    attempt.value = std::to_string(attempt.token);
  }
  // A waiter by notifications listens before its first try, so that no
  // deletion between that try and its first wait is missed.
  redisContext* subscriber = nullptr;
  if (config_.wait_by == WaitBy::notify && ask.wait_ms > 0) {
    subscriber = subscribe(attempt.key);
    if (subscriber == nullptr) {
      placed();
      return {};
    }
  }
  auto turn = turn_after_try(attempt);
  placed();
  const auto deadline = Clock::now() + std::chrono::milliseconds(ask.wait_ms);
  if (!turn && ask.wait_ms == 0) {
    turn = Turn::timed_out;
  } else if (!turn) {
    if (!slots.reserve(ask.key)) {
      if (subscriber != nullptr) redisFree(subscriber);
      return {Kind::busy, 0};
    }
    turn = subscriber != nullptr ? wait_notified(subscriber, attempt, deadline, cancel)
                                 : wait_polling(attempt, deadline, cancel);
    slots.release(ask.key);
  }
  if (subscriber != nullptr) redisFree(subscriber);
  switch (*turn) {
    case Turn::holds:
      return {Kind::granted, attempt.token};
    case Turn::timed_out:
      return {Kind::timed_out, 0};
    case Turn::dropped:
      return {Kind::dropped, 0};
    case Turn::lost:
      return {Kind::lost, 0};
    case Turn::abandoned:
      break;
  }
  return {};
}

RedisLock::Turn RedisLock::wait_polling(Attempt& attempt, Clock::time_point deadline, adapters::Cancellation& cancel) {
  while (true) {
    if (cancel.sleep_until(std::min(Clock::now() + config_.poll, deadline))) return Turn::dropped;
    if (Clock::now() >= deadline) return Turn::timed_out;
    if (const auto turn = turn_after_try(attempt)) return *turn;
  }
}

redisContext* RedisLock::subscribe(const std::string& key) {
  while (true) {
    if (auto* subscriber = connect()) {
      const auto channel = keyspace_channel(key);
      const char* argv[] = {"SUBSCRIBE", channel.c_str()};
      const std::size_t lengths[] = {9, channel.size()};
      Reply confirmed(static_cast<redisReply*>(redisCommandArgv(subscriber, 2, argv, lengths)));
      if (confirmed && confirmed->type == REDIS_REPLY_ARRAY) return subscriber;
      redisFree(subscriber);
    }
    if (stopping_.load()) return nullptr;
    ++retried_;
    std::this_thread::sleep_for(config_.retry_pause);
  }
}

RedisLock::Turn RedisLock::wait_notified(redisContext*& subscriber, Attempt& attempt, Clock::time_point deadline,
                                         adapters::Cancellation& cancel) {
  while (true) {
    // A closed connection or a stopping adapter ends the wait at once: the
    // subscriber's socket is shut down, which wakes the poll below.
    const int fd = subscriber->fd;
    if (!cancel.attach([fd] { ::shutdown(fd, SHUT_RDWR); })) return Turn::dropped;
    const auto turn = listen(subscriber, attempt, deadline, cancel);
    cancel.detach();
    if (turn || cancel.cancelled()) return turn.value_or(Turn::dropped);
    // The subscription broke (Redis went away): listen again, and try
    // again at once, since a deletion may have been missed meanwhile.
    redisFree(subscriber);
    subscriber = subscribe(attempt.key);
    if (subscriber == nullptr) return Turn::abandoned;
    if (const auto tried = turn_after_try(attempt)) return *tried;
  }
}

std::optional<RedisLock::Turn> RedisLock::listen(redisContext* subscriber, Attempt& attempt, Clock::time_point deadline,
                                                 adapters::Cancellation& cancel) {
  while (true) {
    if (cancel.cancelled()) return Turn::dropped;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Turn::timed_out;
    // A message already read and buffered, or one to come within the wait.
    void* message = nullptr;
    if (redisGetReplyFromReader(subscriber, &message) != REDIS_OK) return std::nullopt;
    if (message == nullptr) {
      pollfd ready{subscriber->fd, POLLIN, 0};
      if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0) continue;  // the wait is over (or a signal)
      if (redisBufferRead(subscriber) != REDIS_OK) return std::nullopt;
      continue;
    }
    freeReplyObject(message);
    // Something happened to the key (deleted, expired, set): try again.
    if (Clock::now() >= deadline) return Turn::timed_out;
    if (const auto turn = turn_after_try(attempt)) return *turn;
  }
}

adapters::ReleaseOutcome RedisLock::release(const std::string& key, std::uint64_t token) {
  using Kind = adapters::ReleaseOutcome::Kind;
  const std::string target = redis_key(config_.prefix, key);
  const std::string value = std::to_string(token);
  bool may_have_applied = false;
  // EVAL with the script's text, as the recipe shows it: Redis caches the
  // script by its digest, and a restarted Redis needs no loading first.
  auto deleted = call({"EVAL", release_script, "1", target, value}, &may_have_applied);
  if (!deleted) return {};
  if (deleted->type != REDIS_REPLY_INTEGER) return {};
  if (deleted->integer == 1) return {Kind::released};
  return {may_have_applied ? Kind::lost : Kind::not_held};
}

}  // namespace lockstep::redis_lock
