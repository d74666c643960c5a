// A cluster's identity and membership as an operator meets them, on a
// one-member etcd the suite starts (each test under a prefix of its own):
// `lockstep cluster init` creates a cluster once and refuses a second;
// `add` and `remove` change the members and refuse what would break them (an
// id or an address twice, a member whose node runs, an id that is not a
// member); `show` lists them with the ones running. A node starts only on a
// prefix that holds a cluster (or with --init, which creates it, and
// refuses other members than the cluster's), only under a member's id and
// at its address, only through etcd's client port, and only while no other
// live process holds its id: a second process with a running node's id is
// refused within the claim's TTL and deposes nothing, while a node that
// was killed may start again once its claim lapsed. A node paused past its
// claim's TTL claims its id again when it resumes, unless another process
// took it meanwhile: then it stops, exit 2. Every refusal is one line and
// exit 2.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "client/line_socket.hpp"
#include "live/etcd_cluster.hpp"
#include "live/process.hpp"
#include "tests/live/server_process.hpp"

namespace lockstep {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using testing::lockstep_binary;
using Run = testing::CommandRun;

Run lockstep(const std::string& args) { return testing::run_lockstep(args); }

// A refusal: exit 2, one line, saying `needle`.
void expect_refused(const Run& run, const std::string& needle) {
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_EQ(testing::count_lines(run.output), 1u) << run.output;
  EXPECT_NE(run.output.find(needle), std::string::npos) << "not said: " << needle << "\n" << run.output;
}

class ClusterMembership : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    etcd_ = live::EtcdCluster::start(1, error).release();
    ASSERT_TRUE(etcd_) << error;
  }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(etcd_);
    prefix_ = fmt::format("m-{}-{}", getpid(), ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  std::string etcd() const { return etcd_->endpoints(); }
  std::string cluster(const std::string& action, const std::string& more = "") const {
    return fmt::format("cluster {} --etcd {} --prefix {} {}", action, etcd(), prefix_, more);
  }
  // Listening on `port` too, unless `listen` says otherwise (0: any).
  std::string node_options(const std::string& id, std::uint16_t port, const std::string& more = "",
                           std::optional<std::uint16_t> listen = std::nullopt) const {
    return fmt::format("serve --cluster --etcd {} --prefix {} --node-id {} --advertise 127.0.0.1:{} --port {} "
                       "--leader-ttl-s 2 {}",
                       etcd(), prefix_, id, port, listen.value_or(port), more);
  }
  // A node started in the background; its output in a file of its own.
  std::optional<live::ServerProcess> start_node(const std::string& id, std::uint16_t port, const std::string& more = "") {
    return live::ServerProcess::start("exec " + lockstep_binary() + " " + node_options(id, port, more),
                                      fmt::format("/tmp/lockstep-membership-{}-{}-{}.log", getpid(), id, port));
  }
  // A cluster of n1 alone, at `port`, and n1 started: it must lead.
  std::optional<live::ServerProcess> lone_leader(std::uint16_t port) {
    EXPECT_EQ(lockstep(cluster("init", fmt::format("--members n1=127.0.0.1:{}", port))).code, 0);
    auto node = start_node("n1", port);
    EXPECT_TRUE(node && leads(port)) << (node ? node->log_tail() : "not started");
    return node;
  }
  // Whether the node at `port` answers as leader within `patience`.
  static bool leads(std::uint16_t port, std::chrono::milliseconds patience = 20s) {
    const auto give_up = Clock::now() + patience;
    while (Clock::now() < give_up) {
      if (auto socket = client::LineSocket::connect("127.0.0.1", port, 500ms)) {
        std::string line;
        if (socket->send_line("R probe 1") && socket->read_line(line, 2s) == client::LineSocket::Status::line &&
            line.starts_with("N ")) {
          return true;
        }
      }
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  static live::EtcdCluster* etcd_;
  std::string prefix_;
};

live::EtcdCluster* ClusterMembership::etcd_ = nullptr;

std::uint16_t free_port() { return client::pick_free_port().value(); }

TEST_F(ClusterMembership, InitOnceThenAddAndRemoveMembers) {
  auto run = lockstep(cluster("init", "--members n1=127.0.0.1:27001,n2=127.0.0.1:27002"));
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("created under --prefix '" + prefix_ + "'"), std::string::npos) << run.output;
  expect_refused(lockstep(cluster("init", "--members n1=127.0.0.1:27001")), "holds a cluster already");
  run = lockstep(cluster("show"));
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("2 members\nn1 127.0.0.1:27001 not running\nn2 127.0.0.1:27002 not running\n"),
            std::string::npos)
      << run.output;
  run = lockstep(cluster("add", "--node-id n3 --advertise 127.0.0.1:27003"));
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("added n3 at 127.0.0.1:27003"), std::string::npos) << run.output;
  expect_refused(lockstep(cluster("add", "--node-id n3 --advertise 127.0.0.1:27009")), "--node-id n3 is a member already");
  expect_refused(lockstep(cluster("add", "--node-id n4 --advertise 127.0.0.1:27001")),
                 "--advertise 127.0.0.1:27001 is the address of member n1");
  run = lockstep(cluster("remove", "--node-id n3"));
  EXPECT_EQ(run.code, 0) << run.output;
  expect_refused(lockstep(cluster("remove", "--node-id n9")), "--node-id n9 is not a member");
  EXPECT_EQ(lockstep(cluster("remove", "--node-id n2")).code, 0);
  expect_refused(lockstep(cluster("remove", "--node-id n1")), "--node-id n1 is the last member");
  run = lockstep(cluster("show"));
  EXPECT_NE(run.output.find("1 member\nn1 127.0.0.1:27001 not running\n"), std::string::npos) << run.output;
}

TEST_F(ClusterMembership, ANodeStartsOnlyAsAMemberOfTheClusterUnderItsPrefix) {
  const auto port = free_port();
  // A prefix with no cluster: the typo that used to start a second service.
  expect_refused(lockstep(node_options("n1", port)), "--prefix '" + prefix_ + "' holds no cluster");
  ASSERT_EQ(lockstep(cluster("init", fmt::format("--members n1=127.0.0.1:{}", port))).code, 0);
  expect_refused(lockstep(node_options("n2", free_port())), "--node-id n2 is not a member of the cluster");
  expect_refused(lockstep(node_options("n1", free_port())), "is not n1's address in the cluster");
  expect_refused(lockstep(node_options("n1", port, "--init --members n1=127.0.0.1:1,n2=127.0.0.1:2")),
                 "--init: --prefix '" + prefix_ + "' holds a cluster already");
  // With the cluster's own members, --init starts it like any member.
  auto node = start_node("n1", port, fmt::format("--init --members n1=127.0.0.1:{}", port));
  ASSERT_TRUE(node);
  EXPECT_TRUE(leads(port)) << node->log_tail();
  EXPECT_EQ(node->stop(30s), 0) << node->log_tail();
}

TEST_F(ClusterMembership, InitOnAnEmptyPrefixCreatesTheCluster) {
  const auto port = free_port();
  auto node = start_node("n1", port, "--init");
  ASSERT_TRUE(node);
  EXPECT_TRUE(leads(port)) << node->log_tail();
  EXPECT_NE(node->log_tail().find("created now, members n1)"), std::string::npos) << node->log_tail();
  const auto run = lockstep(cluster("show"));
  EXPECT_NE(run.output.find(fmt::format("n1 127.0.0.1:{} running (", port)), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("), leads"), std::string::npos) << run.output;
  EXPECT_EQ(node->stop(30s), 0) << node->log_tail();
}

TEST_F(ClusterMembership, ASecondProcessWithARunningNodesIdIsRefusedAndDeposesNothing) {
  const auto port = free_port();
  auto first = lone_leader(port);
  ASSERT_TRUE(first);
  // The same id from another process (on another port, as a copied command
  // line would have it): refused once the claim outlived its TTL (2 s).
  const auto second = lockstep(node_options("n1", port, "", 0));
  expect_refused(second, "--node-id n1 is held by a running process");
  EXPECT_LT(second.seconds, 15);
  EXPECT_TRUE(leads(port, 2s)) << first->log_tail();
  EXPECT_EQ(first->log_tail().find("stops leading"), std::string::npos) << first->log_tail();
  expect_refused(lockstep(cluster("remove", "--node-id n1")), "--node-id n1 is running");
  // Killed, its id is free again once its claim lapsed: a new process
  // waits for that and starts.
  first->send_signal(SIGKILL);
  first->stop();
  auto again = start_node("n1", port);
  ASSERT_TRUE(again);
  EXPECT_TRUE(leads(port)) << again->log_tail();
  EXPECT_EQ(again->stop(30s), 0) << again->log_tail();
}

TEST_F(ClusterMembership, APausedNodeClaimsItsIdAgainUnlessAnotherTookIt) {
  const auto port = free_port();
  auto node = lone_leader(port);
  ASSERT_TRUE(node);
  // Paused past its claim's TTL, with no one else: it goes on.
  node->send_signal(SIGSTOP);
  std::this_thread::sleep_for(4s);
  node->send_signal(SIGCONT);
  EXPECT_TRUE(leads(port)) << node->log_tail();
  std::this_thread::sleep_for(1s);
  EXPECT_TRUE(node->running()) << node->log_tail();
  EXPECT_NE(lockstep(cluster("show")).output.find("running ("), std::string::npos);
  // Paused again, and its id taken meanwhile by a process started on
  // another port: once resumed it stops, exit 2, and says why.
  node->send_signal(SIGSTOP);
  auto other = live::ServerProcess::start(
      "exec " + lockstep_binary() + " " + node_options("n1", port, "", 0),
      fmt::format("/tmp/lockstep-membership-{}-other.log", getpid()));
  ASSERT_TRUE(other);
  const auto give_up = Clock::now() + 15s;
  while (Clock::now() < give_up && other->log_tail().find(" leads ") == std::string::npos) {
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_NE(other->log_tail().find(" leads "), std::string::npos) << other->log_tail();
  node->send_signal(SIGCONT);
  const std::string said = "--node-id n1 was claimed by another process";
  const auto stopped_by = Clock::now() + 10s;
  while (Clock::now() < stopped_by && node->log_tail().find(said) == std::string::npos) {
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(node->log_tail().find(said), std::string::npos) << node->log_tail();
  EXPECT_EQ(node->stop(), 2) << node->log_tail();  // exited by itself: its code
  EXPECT_EQ(other->stop(30s), 0) << other->log_tail();
}

TEST_F(ClusterMembership, EtcdsPeerPortAndUrlsAreRefused) {
  const auto port = free_port();
  ASSERT_EQ(lockstep(cluster("init", fmt::format("--members n1=127.0.0.1:{}", port))).code, 0);
  const auto peer = etcd_->peer_endpoint(0);
  expect_refused(lockstep(fmt::format("serve --cluster --etcd {} --prefix {} --node-id n1 --advertise 127.0.0.1:{} "
                                      "--port 0",
                                      peer, prefix_, port)),
                 fmt::format("--etcd {} is the peer port of etcd member m0: give its client address, {}", peer, etcd()));
  expect_refused(lockstep(fmt::format("cluster show --etcd {} --prefix {}", peer, prefix_)), "is the peer port");
  expect_refused(lockstep(fmt::format("serve --cluster --etcd http://{} --prefix {} --node-id n1 --advertise "
                                      "127.0.0.1:{} --port 0",
                                      etcd(), prefix_, port)),
                 fmt::format("--etcd: 'http://{}' is a URL: give host:port ({})", etcd(), etcd()));
}

}  // namespace
}  // namespace lockstep
