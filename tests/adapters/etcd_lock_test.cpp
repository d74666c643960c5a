// lockstep-etcd-lock, etcd's own lock behind lockstep's line protocol, as a
// process in front of a one-member etcd that the suite starts on free
// loopback ports with a temporary data directory (live/etcd_cluster.*).
// Each test starts its own adapter under a prefix of its own, speaks the
// protocol to it over TCP, and reads etcd directly to see what the adapter
// did there. Checked: the key layout (escaping, lease ids, whole seconds);
// a grant's token is the create revision of its etcd key; a try-lock on a
// held key is T and leaves nothing in etcd; a waiter is granted when the
// holder releases, with a larger token; a wait that runs out is T no sooner
// than its wait and takes its key out of etcd; a release with a wrong token,
// or with a waiter's revision, is N; tokens of immediate grants increase
// across keys, while a waiter granted late carries the revision it queued
// at, below a grant made meanwhile on another key (what the document
// reports); a lease of 1 ms lasts etcd's minimum TTL; a closed connection
// takes its waiter out of etcd; a waiter whose key etcd deleted when its
// lease ended (etcd paused past it) has its connection closed unanswered,
// and its session's retry is carried out afresh;
// the waiter bound answers B; a session's
// retry is answered from the session; malformed and overlong lines are E;
// SIGTERM is exit 0; bad options and an unreachable etcd are one line and
// exit 2.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "adapters/etcd_lock/lock_keys.hpp"
#include "client/line_socket.hpp"
#include "tests/adapters/adapter_fixture.hpp"
#include "drivers/etcd/client.hpp"
#include "live/etcd_cluster.hpp"
#include "live/process.hpp"
#include "tests/live/server_process.hpp"

namespace lockstep::etcd_lock {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string adapter_binary() {
  const char* path = std::getenv("LOCKSTEP_ETCD_LOCK_BINARY");
  return path ? path : "lockstep-etcd-lock";
}

using adapter_tests::ask;
using adapter_tests::fields;
using adapter_tests::next;
using adapter_tests::silent;
using adapter_tests::token_of;

TEST(EtcdLockKeys, KeysAreEscapedSoThatNoKeysEtcdPrefixHoldsAnothers) {
  EXPECT_EQ(key_prefix("p", "printer"), "p/printer/");
  EXPECT_EQ(key_prefix("p", "a/b"), "p/a%2Fb/");
  EXPECT_EQ(key_prefix("p", "50%"), "p/50%25/");
  EXPECT_EQ(key_prefix("p", "%2F"), "p/%252F/");  // not the same as "/"
  EXPECT_NE(key_prefix("p", "%2F"), key_prefix("p", "/"));
  EXPECT_FALSE(key_prefix("p", "a/b").starts_with(key_prefix("p", "a")));
}

TEST(EtcdLockKeys, AnAcquireKeyNamesItsLease) {
  const auto prefix = key_prefix("p", "k");
  EXPECT_EQ(acquire_key(prefix, 0x694d7f1a2b3c4d5e), "p/k/694d7f1a2b3c4d5e");
  EXPECT_EQ(lease_of(prefix, acquire_key(prefix, 0x694d7f1a2b3c4d5e)), 0x694d7f1a2b3c4d5e);
  EXPECT_EQ(lease_of(prefix, "p/k/"), std::nullopt);
  EXPECT_EQ(lease_of(prefix, "p/k/xyz"), std::nullopt);
  EXPECT_EQ(lease_of(prefix, "p/other/12"), std::nullopt);
}

TEST(EtcdLockKeys, LeasesAreRoundedUpToWholeSeconds) {
  EXPECT_EQ(lease_ttl_s(1), 1);
  EXPECT_EQ(lease_ttl_s(999), 1);
  EXPECT_EQ(lease_ttl_s(1000), 1);
  EXPECT_EQ(lease_ttl_s(1001), 2);
  EXPECT_EQ(lease_ttl_s(86'400'000), 86'400);
}

class EtcdLockAdapter : public adapter_tests::AdapterFixture {
 protected:
  EtcdLockAdapter() : AdapterFixture("lockstep-etcd-lock") {}

  static void SetUpTestSuite() {
    std::string error;
    etcd_ = live::EtcdCluster::start(1, error).release();
    ASSERT_NE(etcd_, nullptr) << error;
    client_ = new etcd::Client(*etcd::parse_endpoints(etcd_->endpoints(), error));
  }
  static void TearDownTestSuite() {
    delete client_;
    delete etcd_;
  }

  void start_adapter(const std::string& options = "") {
    start_process([&] {
      return fmt::format("exec {} --etcd {} --port {} --prefix {} {}", adapter_binary(), etcd_->endpoints(), port_,
                         prefix_, options);
    });
  }

  // The etcd keys under the lockstep key `key`, in create-revision order.
  std::vector<mvccpb::KeyValue> etcd_keys(const std::string& key) const {
    const auto prefix = key_prefix(prefix_, key);
    etcdserverpb::RangeRequest range;
    range.set_key(prefix);
    range.set_range_end(etcd::prefix_end(prefix));
    range.set_sort_target(etcdserverpb::RangeRequest::CREATE);
    etcdserverpb::RangeResponse response;
    EXPECT_TRUE(client_->range(range, response, 5s).ok());
    return {response.kvs().begin(), response.kvs().end()};
  }
  // Waits until `key` has `count` etcd keys (what a waiter's end leaves).
  bool settles_at(const std::string& key, std::size_t count) const {
    const auto give_up = Clock::now() + 10s;
    while (Clock::now() < give_up) {
      if (etcd_keys(key).size() == count) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  static live::EtcdCluster* etcd_;
  static etcd::Client* client_;
};

live::EtcdCluster* EtcdLockAdapter::etcd_ = nullptr;
etcd::Client* EtcdLockAdapter::client_ = nullptr;

TEST_F(EtcdLockAdapter, AGrantsTokenIsTheCreateRevisionOfItsEtcdKey) {
  start_adapter();
  auto alice = connect();
  const auto grant = ask(alice, "A printer alice 30000 0");
  adapter_tests::expect_grant(grant, "alice", "printer");
  if (HasFatalFailure()) return;
  const auto keys = etcd_keys("printer");
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(static_cast<std::uint64_t>(keys[0].create_revision()), token_of(grant));
  EXPECT_EQ(keys[0].value(), "alice");
  EXPECT_EQ(lease_of(key_prefix(prefix_, "printer"), keys[0].key()), keys[0].lease());
}

TEST_F(EtcdLockAdapter, ATryLockOnAHeldKeyIsTAndLeavesNothingInEtcd) {
  start_adapter();
  auto alice = connect();
  auto bob = connect();
  const auto grant = ask(alice, "A k alice 30000 0");
  ASSERT_EQ(fields(grant)[0], "A") << grant;
  EXPECT_EQ(ask(bob, "A k bob 30000 0"), "T bob k");
  const auto keys = etcd_keys("k");
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(static_cast<std::uint64_t>(keys[0].create_revision()), token_of(grant));
  // The same owner gets no special treatment (simple mode point 9).
  EXPECT_EQ(ask(alice, "A k alice 30000 0"), "T alice k");
}

TEST_F(EtcdLockAdapter, AWaiterIsGrantedWhenTheHolderReleasesWithALargerToken) {
  start_adapter();
  auto alice = connect();
  auto bob = connect();
  const auto first = ask(alice, "A k alice 30000 0");
  ASSERT_TRUE(bob.send_line("A k bob 30000 20000"));
  ASSERT_TRUE(settles_at("k", 2));  // bob's key waits behind alice's
  EXPECT_TRUE(silent(bob, 200ms));
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token_of(first))), fmt::format("R {} k", token_of(first)));
  const auto second = next(bob);
  ASSERT_EQ(fields(second)[0], "A") << second;
  EXPECT_EQ(fields(second)[2], "bob");
  EXPECT_GT(token_of(second), token_of(first));
  const auto keys = etcd_keys("k");
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(static_cast<std::uint64_t>(keys[0].create_revision()), token_of(second));
}

TEST_F(EtcdLockAdapter, AWaitThatRunsOutIsTNoSoonerThanItsWaitAndLeavesNoKey) {
  start_adapter();
  auto alice = connect();
  auto bob = connect();
  ASSERT_EQ(fields(ask(alice, "A k alice 30000 0"))[0], "A");
  const auto sent = Clock::now();
  EXPECT_EQ(ask(bob, "A k bob 30000 400"), "T bob k");
  EXPECT_GE(Clock::now() - sent, 400ms);
  EXPECT_EQ(etcd_keys("k").size(), 1u);
}

TEST_F(EtcdLockAdapter, AReleaseWithAnyTokenButTheHoldersIsN) {
  start_adapter();
  auto alice = connect();
  auto bob = connect();
  const auto grant = ask(alice, "A k alice 30000 0");
  const auto token = token_of(grant);
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token + 1000)), fmt::format("N {} k", token + 1000));
  EXPECT_EQ(ask(alice, fmt::format("R other {}", token)), fmt::format("N {} other", token));
  // A waiter's etcd key has a create revision too; it is no token.
  ASSERT_TRUE(bob.send_line("A k bob 30000 20000"));
  ASSERT_TRUE(settles_at("k", 2));
  const auto waiter_revision = etcd_keys("k").at(1).create_revision();
  EXPECT_EQ(ask(alice, fmt::format("R k {}", waiter_revision)), fmt::format("N {} k", waiter_revision));
  EXPECT_EQ(etcd_keys("k").size(), 2u);  // nothing changed
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token)), fmt::format("R {} k", token));
  EXPECT_EQ(fields(next(bob))[0], "A");
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token)), fmt::format("N {} k", token));  // released already
}

TEST_F(EtcdLockAdapter, TokensOfImmediateGrantsIncreaseAcrossKeysButALateWaiterKeepsItsOlderRevision) {
  start_adapter();
  auto alice = connect();
  auto bob = connect();
  std::vector<std::uint64_t> tokens;
  for (const auto* key : {"k1", "k2", "k3"}) {
    const auto grant = ask(alice, fmt::format("A {} alice 30000 0", key));
    ASSERT_EQ(fields(grant)[0], "A") << grant;
    if (!tokens.empty()) {
      EXPECT_GT(token_of(grant), tokens.back()) << grant;
    }
    tokens.push_back(token_of(grant));
  }
  // bob queues on k1 (his etcd key is created now); carol is granted k4
  // after that; when alice releases k1, bob's token is the revision he
  // queued at: below carol's, though issued after it.
  ASSERT_TRUE(bob.send_line("A k1 bob 30000 20000"));
  ASSERT_TRUE(settles_at("k1", 2));
  const auto carol = ask(alice, "A k4 carol 30000 0");
  ASSERT_EQ(fields(carol)[0], "A") << carol;
  EXPECT_EQ(ask(alice, fmt::format("R k1 {}", tokens[0])), fmt::format("R {} k1", tokens[0]));
  const auto late = next(bob);
  ASSERT_EQ(fields(late)[0], "A") << late;
  EXPECT_GT(token_of(late), tokens[2]);
  EXPECT_LT(token_of(late), token_of(carol)) << "a waiter's token is the revision it queued at";
}

TEST_F(EtcdLockAdapter, ALeaseOfOneMillisecondLastsEtcdsMinimumTtl) {
  start_adapter();
  auto alice = connect();
  auto bob = connect();
  ASSERT_EQ(fields(ask(alice, "A k alice 1 0"))[0], "A");
  const auto granted = Clock::now();
  const auto after = ask(bob, "A k bob 30000 20000", 20s);
  ASSERT_EQ(fields(after)[0], "A") << after;
  // etcd raises a 1 s lease to its minimum TTL (2 s with its default
  // election timeout); its lessor ends it, so the waiter waits that long.
  EXPECT_GE(Clock::now() - granted, 1500ms);
}

TEST_F(EtcdLockAdapter, AClosedConnectionTakesItsWaiterOutOfEtcd) {
  start_adapter();
  auto alice = connect();
  const auto grant = ask(alice, "A k alice 30000 0");
  {
    auto bob = connect();
    ASSERT_TRUE(bob.send_line("A k bob 30000 20000"));
    ASSERT_TRUE(settles_at("k", 2));
  }
  EXPECT_TRUE(settles_at("k", 1));
  EXPECT_EQ(static_cast<std::uint64_t>(etcd_keys("k").at(0).create_revision()), token_of(grant));
  // and the holder is not handed anything: the key is free once released
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token_of(grant))), fmt::format("R {} k", token_of(grant)));
  EXPECT_EQ(etcd_keys("k").size(), 0u);
}

TEST_F(EtcdLockAdapter, AWaiterWhoseLeaseEtcdEndedIsClosedUnansweredNotGranted) {
  start_adapter();
  auto alice = connect();
  auto bob = connect();
  const auto grant = ask(alice, "A k alice 60000 0");
  ASSERT_EQ(fields(grant)[0], "A") << grant;
  ASSERT_TRUE(bob.send_line("A k bob 2000 30000 b1 1"));  // its key lives on a 2 s lease
  ASSERT_TRUE(settles_at("k", 2));
  // etcd paused past that lease: the adapter's keep-alives cannot reach it,
  // and once it runs again its lessor ends the lease and deletes the key.
  etcd_->pause(0);
  std::this_thread::sleep_for(4s);
  etcd_->resume(0);
  EXPECT_EQ(next(bob, 15s), "(closed)") << "neither A (etcd never granted it) nor T (its wait is not over)";
  ASSERT_TRUE(settles_at("k", 1));
  EXPECT_EQ(static_cast<std::uint64_t>(etcd_keys("k").at(0).create_revision()), token_of(grant));
  // etcd kept nothing of it, so a retry with its session is carried out
  // afresh: it queues again, and is granted on alice's release.
  auto again = connect();
  ASSERT_TRUE(again.send_line("A k bob 2000 30000 b1 1"));
  ASSERT_TRUE(settles_at("k", 2));
  EXPECT_EQ(ask(alice, fmt::format("R k {}", token_of(grant))), fmt::format("R {} k", token_of(grant)));
  const auto retried = next(again);
  EXPECT_EQ(fields(retried)[0], "A") << retried;
}

TEST_F(EtcdLockAdapter, PastTheWaiterBoundAnAcquireIsBusyAndPutsNothing) {
  start_adapter("--max-waiters-per-key 1 --max-waiters 2");
  auto alice = connect();
  auto bob = connect();
  auto carol = connect();
  ASSERT_EQ(fields(ask(alice, "A k alice 30000 0"))[0], "A");
  ASSERT_TRUE(bob.send_line("A k bob 30000 20000"));
  ASSERT_TRUE(settles_at("k", 2));
  EXPECT_EQ(ask(carol, "A k carol 30000 20000"), "B carol k");
  EXPECT_EQ(etcd_keys("k").size(), 2u);
  // A free key is granted whatever the waiters: never B.
  EXPECT_EQ(fields(ask(carol, "A j carol 30000 20000"))[0], "A");
}

TEST_F(EtcdLockAdapter, ASessionsRetryIsAnsweredFromTheSessionAndTakenOnce) {
  start_adapter("--session-window 2");
  std::string first;
  {
    auto alice = connect();
    first = ask(alice, "A k alice 30000 0 c1 1");
    ASSERT_EQ(fields(first)[0], "A") << first;
  }
  auto again = connect();
  EXPECT_EQ(ask(again, "A k alice 30000 0 c1 1"), first);
  EXPECT_EQ(etcd_keys("k").size(), 1u);
  EXPECT_EQ(ask(again, "A k alice 30000 0 c1 2"), "T alice k");
  EXPECT_EQ(ask(again, "A k alice 30000 0 c1 3"), "T alice k");
  EXPECT_EQ(ask(again, "A k alice 30000 0 c1 1"), "E stale request");
  EXPECT_EQ(ask(again, fmt::format("R k {} c1 4", token_of(first))), fmt::format("R {} k", token_of(first)));
}

TEST_F(EtcdLockAdapter, MalformedAndOverlongLinesAreE) {
  start_adapter("--max-line-bytes 64 --max-lease-ms 60000");
  auto alice = connect();
  for (const auto* line : {"A k alice 5 5 5", "a k alice 5 5", "A k  alice 5 5", "", "R k 0", "A k alice 05 0",
                           "A k alice 60001 0", "R k 18446744073709551616"}) {
    const auto answer = ask(alice, line);
    EXPECT_TRUE(answer.starts_with("E ")) << "'" << line << "' got '" << answer << "'";
  }
  EXPECT_EQ(fields(ask(alice, "A k alice 60000 0"))[0], "A");  // still usable
  EXPECT_TRUE(ask(alice, std::string(100, 'x')).starts_with("E "));
  EXPECT_EQ(next(alice, 5s), "(closed)");
}

TEST_F(EtcdLockAdapter, SigtermStopsItWithExitZeroAndTakesItsWaitersOutOfEtcd) {
  start_adapter();
  auto alice = connect();
  auto bob = connect();
  ASSERT_EQ(fields(ask(alice, "A k alice 30000 0"))[0], "A");
  ASSERT_TRUE(bob.send_line("A k bob 30000 20000"));
  ASSERT_TRUE(settles_at("k", 2));
  EXPECT_EQ(adapter_->stop(30s), 0) << adapter_->log_tail();  // a long grace: the claim is the clean exit
  adapter_.reset();
  EXPECT_EQ(etcd_keys("k").size(), 1u);  // alice's grant stands until its lease ends
}

testing::CommandRun run_adapter_command(const std::string& options) {
  return testing::run_command(fmt::format("{} {}", adapter_binary(), options));
}

TEST(EtcdLockAdapterOptions, BadOptionsAreOneLineAndExitTwo) {
  for (const auto* options :
       {"", "--etcd 127.0.0.1:1 --port 70000", "--etcd 127.0.0.1:1 --port -1", "--etcd nohostport",
        "--etcd 127.0.0.1:1 --max-waiters 5 --max-in-flight 4", "--etcd 127.0.0.1:1 --max-line-bytes 10",
        "--etcd 127.0.0.1:1 --etcd-timeout-ms 5", "--etcd 127.0.0.1:1 --prefix 'a b'",
        "--etcd 127.0.0.1:1 --host nowhere", "--etcd 127.0.0.1:1 --max-lease-ms 0",
        "--etcd 127.0.0.1:1 --session-window 0", "--etcd 127.0.0.1:1 --unknown"}) {
    const auto run = run_adapter_command(options);
    EXPECT_EQ(run.code, 2) << options << ": " << run.output;
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << options << ": " << run.output;
  }
}

TEST(EtcdLockAdapterOptions, AnUnreachableEtcdIsOneLineAndExitTwoWithinItsTimeout) {
  const auto port = client::pick_free_port();
  ASSERT_TRUE(port);
  const auto started = Clock::now();
  const auto run = run_adapter_command(fmt::format("--etcd 127.0.0.1:{} --port 0 --etcd-timeout-ms 500", *port));
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_NE(run.output.find("did not answer within 500 ms"), std::string::npos) << run.output;
  EXPECT_LT(Clock::now() - started, 10s);
}

}  // namespace
}  // namespace lockstep::etcd_lock
