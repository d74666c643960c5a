// lockstep-redis-lock, the common single-instance Redis lock behind
// lockstep's line protocol, as a process in front of a redis-server that
// the suite starts on a free loopback port (publishing keyspace events of
// deletions and expiries) and stops. Each test starts its own adapter under
// a prefix of its own, speaks the protocol to it over TCP, and reads Redis
// directly to see what the adapter did there. Checked: a grant is the
// recipe's `SET key value NX PX lease` and its token is that value, a
// random number (tokens are not ordered), or with `--tokens counter` the
// next number of a counter (ordered as grants are); a try-lock on a held
// key is T, the same owner included; a release deletes the key only with
// the holder's value, and is N once Redis has ended the lease; a waiter is
// granted after the release, by polling or by notification, and its wait
// runs out as T no sooner than its wait; Redis keeps no queue: a key freed
// while a waiter sleeps between two polls goes to a newcomer (made to
// happen with a long poll), the finding of docs/testing-other-lock-services.md;
// a closed connection takes its waiter away, and a retry of that waiter's
// session hears T; a seq behind the session window is `E stale request`;
// the waiter bound answers B; malformed lines are E; SIGTERM is exit 0; bad
// options, a Redis that does not answer, and --wait notify without keyspace
// events are one line and exit 2.
#include <gtest/gtest.h>

#include <hiredis/hiredis.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "adapters/redis_lock/redis_lock.hpp"
#include "client/line_socket.hpp"
#include "live/process.hpp"
#include "tests/adapters/adapter_fixture.hpp"

namespace lockstep::redis_lock {
namespace {

using namespace std::chrono_literals;
using adapter_tests::ask;
using adapter_tests::fields;
using adapter_tests::next;
using adapter_tests::silent;
using adapter_tests::token_of;
using Clock = std::chrono::steady_clock;

std::string adapter_binary() {
  const char* path = std::getenv("LOCKSTEP_REDIS_LOCK_BINARY");
  return path ? path : "lockstep-redis-lock";
}

TEST(RedisLockKeys, AKeyIsThePrefixAndTheKeyAndTheCounterIsOutsideEveryKey) {
  EXPECT_EQ(redis_key("p", "printer"), "p:printer");
  EXPECT_EQ(keyspace_channel(redis_key("p", "a/b")), "__keyspace@0__:p:a/b");
  EXPECT_FALSE(counter_key("p").starts_with("p:"));  // no lockstep key maps to it
}

class RedisLockAdapter : public adapter_tests::AdapterFixture {
 protected:
  RedisLockAdapter() : AdapterFixture("lockstep-redis-lock") {}

  static void SetUpTestSuite() {
    const auto port = client::pick_free_port();
    ASSERT_TRUE(port);
    redis_port_ = *port;
    auto started = live::ServerProcess::start(
        fmt::format("exec redis-server --port {} --bind 127.0.0.1 --save '' --appendonly no --protected-mode no "
                    "--notify-keyspace-events Kgx",
                    redis_port_),
        fmt::format("{}/redis-server-{}.log", ::testing::TempDir(), redis_port_));
    ASSERT_TRUE(started);
    redis_ = new live::ServerProcess(std::move(*started));
    const auto give_up = Clock::now() + 10s;
    while (Clock::now() < give_up && (client_ == nullptr || client_->err != 0)) {
      if (client_ != nullptr) redisFree(client_);
      client_ = redisConnect("127.0.0.1", redis_port_);
      if (client_->err != 0) std::this_thread::sleep_for(50ms);
    }
    ASSERT_EQ(client_->err, 0) << redis_->log_tail();
  }
  static void TearDownTestSuite() {
    if (client_ != nullptr) redisFree(client_);
    delete redis_;
  }

  std::string command(const std::string& options) const {
    return fmt::format("exec {} --redis 127.0.0.1:{} --port {} --prefix {} {}", adapter_binary(), redis_port_, port_,
                       prefix_, options);
  }
  void start_adapter(const std::string& options = "") {
    start_process([&] { return command(options); });
  }

  // A Redis command of the test's own, its reply as text ("(nil)" for none).
  static std::string redis(const std::string& line) {
    auto* reply = static_cast<redisReply*>(redisCommand(client_, line.c_str()));
    if (reply == nullptr) return "(no reply)";
    std::string text;
    switch (reply->type) {
      case REDIS_REPLY_STRING:
      case REDIS_REPLY_STATUS:
      case REDIS_REPLY_ERROR:
        text.assign(reply->str, reply->len);
        break;
      case REDIS_REPLY_INTEGER:
        text = std::to_string(reply->integer);
        break;
      default:
        text = "(nil)";
    }
    freeReplyObject(reply);
    return text;
  }
  std::string held(const std::string& key) const { return redis(fmt::format("GET {}", redis_key(prefix_, key))); }

  // How the adapter ends, and what it printed, when it cannot run.
  std::pair<int, std::string> refused(const std::string& options) {
    port_ = 1;  // never reached: the adapter must refuse before it listens
    std::string out;
    FILE* pipe = ::popen((command(options) + " 2>&1").c_str(), "r");
    char buffer[512];
    while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    const int status = pipe == nullptr ? -1 : ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
  }

  static std::uint16_t redis_port_;
  static live::ServerProcess* redis_;
  static redisContext* client_;
};

std::uint16_t RedisLockAdapter::redis_port_ = 0;
live::ServerProcess* RedisLockAdapter::redis_ = nullptr;
redisContext* RedisLockAdapter::client_ = nullptr;

TEST_F(RedisLockAdapter, AGrantIsSetNxPxAndItsTokenIsTheValueSet) {
  start_adapter();
  auto alice = connect();
  const auto grant = ask(alice, "A printer alice 30000 0");
  adapter_tests::expect_grant(grant, "alice", "printer");
  if (HasFatalFailure()) return;
  EXPECT_EQ(held("printer"), std::to_string(token_of(grant)));
  // The lease is the key's expiry, in milliseconds.
  const auto left_ms = std::stoll(redis(fmt::format("PTTL {}", redis_key(prefix_, "printer"))));
  EXPECT_GT(left_ms, 25'000);
  EXPECT_LE(left_ms, 30'000);
}

TEST_F(RedisLockAdapter, RandomTokensAreNotOrderedCounterTokensRiseInTheOrderOfGrants) {
  start_adapter();
  auto alice = connect();
  std::vector<std::uint64_t> tokens;
  for (int i = 0; i < 20; ++i) {
    const auto grant = ask(alice, fmt::format("A k{} alice 30000 0", i));
    ASSERT_EQ(fields(grant)[0], "A") << grant;
    tokens.push_back(token_of(grant));
  }
  // Twenty random values in increasing order: one chance in 20!.
  EXPECT_FALSE(std::is_sorted(tokens.begin(), tokens.end())) << "random values are no order of grants";
  adapter_->stop();
  prefix_ += "-counter";
  start_adapter("--tokens counter");
  auto bob = connect();
  std::uint64_t last = 0;
  for (int i = 0; i < 20; ++i) {
    const auto grant = ask(bob, fmt::format("A k{} bob 30000 0", i % 3));
    if (fields(grant)[0] != "A") continue;  // k0..k2 are held after the first three
    EXPECT_GT(token_of(grant), last) << grant;
    last = token_of(grant);
    EXPECT_EQ(ask(bob, fmt::format("R k{} {}", i % 3, last)), fmt::format("R {} k{}", last, i % 3));
  }
  EXPECT_EQ(redis(fmt::format("GET {}", counter_key(prefix_))), std::to_string(last));
}

TEST_F(RedisLockAdapter, ATryLockOnAHeldKeyIsTTheSameOwnerIncluded) {
  start_adapter();
  auto alice = connect();
  auto bob = connect();
  const auto grant = ask(alice, "A k alice 30000 0");
  ASSERT_EQ(fields(grant)[0], "A") << grant;
  EXPECT_EQ(ask(bob, "A k bob 30000 0"), "T bob k");
  EXPECT_EQ(ask(alice, "A k alice 30000 0"), "T alice k");  // no re-entry (simple mode point 9)
  EXPECT_EQ(held("k"), std::to_string(token_of(grant)));
}

TEST_F(RedisLockAdapter, AReleaseDeletesOnlyWithTheHoldersValueAndIsNOnceRedisEndedTheLease) {
  start_adapter();
  auto alice = connect();
  const auto token = token_of(ask(alice, "A k alice 30000 0"));
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token + 1)), fmt::format("N {} k", token + 1));
  EXPECT_EQ(ask(alice, fmt::format("R other {}", token)), fmt::format("N {} other", token));
  EXPECT_EQ(held("k"), std::to_string(token));
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token)), fmt::format("R {} k", token));
  EXPECT_EQ(held("k"), "(nil)");
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token)), fmt::format("N {} k", token));
  // After its lease the key is gone in Redis: N (cluster mode's reading).
  const auto short_lease = token_of(ask(alice, "A k alice 100 0"));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(ask(alice, fmt::format("R k {}", short_lease)), fmt::format("N {} k", short_lease));
}

TEST_F(RedisLockAdapter, AWaiterIsGrantedAfterTheReleaseByPollingAndByNotification) {
  for (const auto* way : {"--wait poll --poll-ms 20", "--wait notify"}) {
    SCOPED_TRACE(way);
    prefix_ += "-";
    start_adapter(way);
    auto alice = connect();
    auto bob = connect();
    const auto first = token_of(ask(alice, "A k alice 30000 0"));
    ASSERT_TRUE(bob.send_line("A k bob 30000 20000"));
    EXPECT_TRUE(silent(bob, 300ms));
    EXPECT_EQ(ask(alice, fmt::format("R k {}", first)), fmt::format("R {} k", first));
    const auto released = Clock::now();
    const auto second = next(bob);
    ASSERT_EQ(fields(second)[0], "A") << second;
    EXPECT_EQ(fields(second)[2], "bob");
    EXPECT_LT(Clock::now() - released, 2s);
    EXPECT_EQ(held("k"), std::to_string(token_of(second)));
    adapter_->stop();
  }
}

TEST_F(RedisLockAdapter, AWaitThatRunsOutIsTNoSoonerThanItsWait) {
  for (const auto* way : {"--wait poll", "--wait notify"}) {
    SCOPED_TRACE(way);
    prefix_ += "-";
    start_adapter(way);
    auto alice = connect();
    auto bob = connect();
    const auto token = token_of(ask(alice, "A k alice 30000 0"));
    const auto sent = Clock::now();
    EXPECT_EQ(ask(bob, "A k bob 30000 400"), "T bob k");
    EXPECT_GE(Clock::now() - sent, 400ms);
    EXPECT_EQ(held("k"), std::to_string(token));
    adapter_->stop();
  }
}

// Redis keeps no queue. Made to happen: the waiter polls every 2 s, the
// holder's lease ends 300 ms after the waiter began to wait, and a newcomer
// asks 200 ms later, between two of the waiter's polls: it is granted at
// once, ahead of a waiter that has waited all along (in lockstep's
// contract the key would have gone to the waiter at the expiry).
TEST_F(RedisLockAdapter, AKeyFreedWhileAWaiterSleepsGoesToANewcomer) {
  start_adapter("--wait poll --poll-ms 2000");
  auto alice = connect();
  auto bob = connect();
  auto carol = connect();
  ASSERT_EQ(fields(ask(alice, "A k alice 300 0"))[0], "A");
  ASSERT_TRUE(bob.send_line("A k bob 30000 10000"));
  std::this_thread::sleep_for(500ms);
  const auto newcomer = ask(carol, "A k carol 30000 0");
  ASSERT_EQ(fields(newcomer)[0], "A") << "a try-lock is granted while a waiter waits: " << newcomer;
  EXPECT_EQ(next(bob, 3s), "(nothing)") << "the waiter's next poll finds the newcomer's key";
  EXPECT_EQ(ask(carol, fmt::format("R k {}", token_of(newcomer))), fmt::format("R {} k", token_of(newcomer)));
  EXPECT_EQ(fields(next(bob, 5s))[0], "A");
}

TEST_F(RedisLockAdapter, AClosedConnectionTakesItsWaiterAwayAndASessionRetryOfItHearsT) {
  start_adapter("--wait notify");
  auto alice = connect();
  const auto token = token_of(ask(alice, "A k alice 30000 0"));
  {
    auto bob = connect();
    ASSERT_TRUE(bob.send_line("A k bob 30000 20000 bob-client 1"));
    EXPECT_TRUE(silent(bob, 300ms));
  }  // bob's connection closes: his waiter leaves
  std::this_thread::sleep_for(300ms);
  auto again = connect();
  EXPECT_EQ(ask(again, "A k bob 30000 20000 bob-client 1"), "T bob k") << "a dropped waiter's retry hears T";
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token)), fmt::format("R {} k", token));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(held("k"), "(nil)") << "nobody took the key: the waiter left";
  // A new seq of the same client is a new request.
  EXPECT_EQ(fields(ask(again, "A k bob 30000 0 bob-client 2"))[0], "A");
}

TEST_F(RedisLockAdapter, ASeqBehindTheSessionWindowIsStale) {
  start_adapter("--session-window 2");
  auto alice = connect();
  for (int seq = 1; seq <= 3; ++seq) {
    EXPECT_EQ(fields(ask(alice, fmt::format("A k{} alice 30000 0 c {}", seq, seq)))[0], "A");
  }
  EXPECT_EQ(ask(alice, "A k1 alice 30000 0 c 1"), "E stale request");  // 1 <= 3 - 2
  EXPECT_EQ(fields(ask(alice, "A k2 alice 30000 0 c 2"))[0], "A");     // kept: the first answer again
}

TEST_F(RedisLockAdapter, TheWaiterBoundAnswersB) {
  start_adapter("--max-waiters-per-key 1 --max-waiters 1");
  auto alice = connect();
  auto bob = connect();
  auto carol = connect();
  ASSERT_EQ(fields(ask(alice, "A k alice 30000 0"))[0], "A");
  ASSERT_TRUE(bob.send_line("A k bob 30000 20000"));
  EXPECT_TRUE(silent(bob, 300ms));
  EXPECT_EQ(ask(carol, "A k carol 30000 20000"), "B carol k");
}

TEST_F(RedisLockAdapter, MalformedLinesAreEAndSigtermIsExitZero) {
  start_adapter();
  auto alice = connect();
  EXPECT_EQ(fields(ask(alice, "A k alice 0 0"))[0], "E");
  EXPECT_EQ(fields(ask(alice, "hello"))[0], "E");
  EXPECT_EQ(fields(ask(alice, "A k alice 1000 0"))[0], "A");  // the connection stays usable
  EXPECT_EQ(adapter_->stop(10s), 0);
  adapter_.reset();
}

TEST_F(RedisLockAdapter, ConfigurationsItCannotRunWithAreOneLineAndExitTwo) {
  for (const auto* options : {"--poll-ms 0", "--wait sometimes", "--wait notify --poll-ms 5", "--tokens sequential",
                              "--max-waiters 2000 --max-in-flight 1000", "--redis-timeout-ms 5"}) {
    const auto [code, out] = refused(options);
    EXPECT_EQ(code, 2) << options << ": " << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << options << ": " << out;
  }
  // Redis where nothing listens, and a Redis without keyspace events.
  const auto bad = fmt::format("exec {} --redis 127.0.0.1:1 --port 0 2>&1", adapter_binary());
  FILE* pipe = ::popen(bad.c_str(), "r");
  char buffer[512] = {};
  const bool line = std::fgets(buffer, sizeof buffer, pipe) != nullptr;
  EXPECT_EQ(WEXITSTATUS(::pclose(pipe)), 2);
  EXPECT_TRUE(line && std::string(buffer).find("did not answer") != std::string::npos) << buffer;
  auto* none = static_cast<redisReply*>(redisCommand(client_, "CONFIG SET notify-keyspace-events %s", ""));
  ASSERT_NE(none, nullptr);
  freeReplyObject(none);
  const auto [code, out] = refused("--wait notify");
  ASSERT_EQ(redis("CONFIG SET notify-keyspace-events Kgx"), "OK");
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("notify-keyspace-events"), std::string::npos) << out;
}

}  // namespace
}  // namespace lockstep::redis_lock
