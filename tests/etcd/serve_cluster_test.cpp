// `lockstep serve --cluster` as a process: what it refuses at start (each a
// one-line error and exit 2, nothing served): an unreachable etcd, within
// its timeout and never a hang; options out of range, missing, or of the
// other mode; an unknown cluster bug. And, on a one-member etcd started by
// the test, what one node does: a request with a session is answered after
// its command comes back from etcd, a retry with the same session on a new
// connection is answered from the session and applied once, another request
// under that session is refused E (never told the first one's outcome: a
// program run twice with one client id, through ClusterClient too, whose
// made-up ids never collide), SIGUSR1 prints the status line, SIGTERM stops
// it with exit 0 and resigns (the election key is gone at once).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "client/cluster_client.hpp"
#include "client/line_socket.hpp"
#include "drivers/etcd/client.hpp"
#include "drivers/etcd/log_format.hpp"
#include "live/etcd_cluster.hpp"
#include "live/process.hpp"
#include "tests/live/server_process.hpp"

namespace lockstep {
namespace {

using namespace std::chrono_literals;

using testing::count_lines;
using testing::lockstep_binary;

testing::CommandRun serve(const std::string& options) { return testing::run_lockstep("serve " + options); }

TEST(ServeCluster, AnUnreachableEtcdIsOneLineAndExitTwoWithinItsTimeout) {
  const auto port = client::pick_free_port();
  ASSERT_TRUE(port);
  const auto started = std::chrono::steady_clock::now();
  const auto run = serve(fmt::format("--cluster --etcd 127.0.0.1:{} --node-id n1 --advertise 127.0.0.1:7001 --port 0 "
                                     "--etcd-timeout-ms 1000",
                                     *port));
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_EQ(count_lines(run.output), 1u) << run.output;
  EXPECT_NE(run.output.find("lockstep serve: cannot read the cluster from etcd at 127.0.0.1:"), std::string::npos)
      << run.output;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

TEST(ServeCluster, BadOptionsAreOneLineAndExitTwo) {
  const std::string base = "--cluster --etcd 127.0.0.1:2379 --node-id n1 --advertise 127.0.0.1:7001 ";
  for (const std::string& options :
       {std::string("--cluster --node-id n1 --advertise 127.0.0.1:7001"), base + "--leader-ttl-s 0",
        base + "--leader-ttl-s 3601", base + "--etcd-timeout-ms 50", base + "--session-window 0",
        base + "--waiter-grace-ms 86400001",
        base + "--max-in-flight 0", base + "--prefix 'a b'", base + "--state-file /tmp/x", base + "--sweep-ms 100",
        base + "--inject-bug lifo-handoff", std::string("--cluster --etcd 127.0.0.1:2379 --advertise 127.0.0.1:7001"),
        std::string("--cluster --etcd 127.0.0.1:2379 --node-id n1"), base + "--max-keys 0",
        std::string("--cluster --etcd https://127.0.0.1:2379 --node-id n1 --advertise 127.0.0.1:7001"),
        std::string("--cluster --etcd http://127.0.0.1:2379 --node-id n1 --advertise 127.0.0.1:7001"),
        base + "--members n1=127.0.0.1:7001", base + "--init --members n2=127.0.0.1:7002",
        base + "--host 999.1.1.1",
        std::string("--etcd 127.0.0.1:2379"), std::string("--node-id n1")}) {
    const auto run = serve(options);
    EXPECT_EQ(run.code, 2) << options << "\n" << run.output;
    EXPECT_EQ(count_lines(run.output), 1u) << options << "\n" << run.output;
    // Refused by the parser or at start, with one prefix.
    EXPECT_TRUE(run.output.starts_with("lockstep serve: ")) << options << "\n" << run.output;
  }
}

TEST(ServeCluster, ListsTheClusterCatalogue) {
  const auto run = serve("--cluster --list-bugs");
  EXPECT_EQ(run.code, 0);
  EXPECT_NE(run.output.find("expire-without-token-check"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("lifo-handoff "), std::string::npos) << run.output;
}

std::string answer(client::LineSocket& socket, const std::string& line) {
  socket.send_line(line);
  std::string got;
  if (socket.read_line(got, 10s) != client::LineSocket::Status::line) return "<none>";
  return got;
}

TEST(ServeCluster, OneNodeAnswersAfterEtcdAndAppliesARetryOnce) {
  std::string error;
  auto etcd = live::EtcdCluster::start(1, error);
  ASSERT_TRUE(etcd) << error;
  const auto port = client::pick_free_port().value();
  const auto log = fmt::format("/tmp/lockstep-serve-cluster-{}.log", port);
  auto node = live::ServerProcess::start(
      fmt::format("exec {} serve --cluster --init --etcd {} --node-id n1 --advertise 127.0.0.1:{} --port {} --prefix t",
                  lockstep_binary(), etcd->endpoints(), port, port),
      log);
  ASSERT_TRUE(node);
  // Until it leads it redirects, to no one.
  std::string first;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto socket = client::LineSocket::connect("127.0.0.1", port, 10s);
    ASSERT_TRUE(socket) << node->log_tail();
    first = answer(*socket, "A k alice 60000 0 c1 1");
    if (first != "E not-leader") break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(first.starts_with("A ")) << first << "\n" << node->log_tail();
  // The same session and sequence number on a new connection: the same
  // answer, from the session, and no second grant.
  auto again = client::LineSocket::connect("127.0.0.1", port, 10s);
  ASSERT_TRUE(again);
  EXPECT_EQ(answer(*again, "A k alice 60000 0 c1 1"), first);
  EXPECT_EQ(answer(*again, "A k bob 60000 0 c2 1"), "T bob k");
  // Another request under c1's number 1: refused, nothing changes.
  EXPECT_EQ(answer(*again, "A j alice 60000 0 c1 1"), "E session reused for another request");
  EXPECT_EQ(answer(*again, "A j carol 60000 0"), "A 2 carol j");  // j was not taken by the refused one
  // The trial that found it: a program run twice with one literal client id
  // sent number 1 for `scanner` after its first run's `printer`, and was
  // told the printer's grant. Now it hears E; with the ids ClusterClient
  // makes up, the second run is another client and is granted.
  const auto run_once = [&](const std::string& id, const std::string& key) {
    client::ClusterClient::Options options;
    options.nodes = {{"127.0.0.1", port}};
    options.client_id = id;
    client::ClusterClient program(options);
    std::optional<client::ClusterClient::Result> result;
    program.acquire(key, "spooler", 60'000, 0, [&](const auto& r) { result = r; });
    while (!result) program.poll(100ms);
    return format_response(result->response);
  };
  EXPECT_TRUE(run_once("printer-spooler-1", "printer").starts_with("A "));
  EXPECT_EQ(run_once("printer-spooler-1", "scanner"), "E session reused for another request");
  EXPECT_TRUE(run_once("", "scanner").starts_with("A "));
  EXPECT_TRUE(answer(*again, "A k alice 60000 0 c1 0").starts_with("E seq must be")) << "sequence number 0";
  // Status on SIGUSR1.
  node->send_signal(SIGUSR1);
  std::this_thread::sleep_for(300ms);
  EXPECT_NE(node->log_tail().find("status node=n1 applied="), std::string::npos) << node->log_tail();
  // SIGTERM: exit 0, and the election key is gone (it resigned).
  EXPECT_EQ(node->stop(30s), 0) << node->log_tail();  // a long grace: the claim is the clean exit
  etcd::Client client(*etcd::parse_endpoints(etcd->endpoints(), error));
  etcdserverpb::RangeRequest request;
  request.set_key(etcd::Keys("t").leader());
  etcdserverpb::RangeResponse response;
  ASSERT_TRUE(client.range(request, response, 5s).ok());
  EXPECT_EQ(response.kvs_size(), 0);
  std::remove(log.c_str());
}

}  // namespace
}  // namespace lockstep
