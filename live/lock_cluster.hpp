// A lock-service cluster on loopback for tests, benchmarks and the fuzzer:
// etcd members (live/etcd_cluster.hpp) and `lockstep serve --cluster` nodes
// (or the nodes of another service, from a command template), each on free
// ports, the nodes' output in files of a temporary directory; everything is
// stopped and removed on every path, the destructor included. Nodes can be
// killed (SIGKILL), paused (SIGSTOP) and resumed, and restarted on their
// port; the leader is found by asking (a request a follower redirects), and
// a node's applied index and table digest by its status line (SIGUSR1).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/cluster_client.hpp"
#include "live/etcd_cluster.hpp"
#include "live/fault_proxy.hpp"
#include "live/process.hpp"

namespace lockstep::live {

class LockCluster {
 public:
  struct Options {
    std::string lockstep_binary;
    int nodes = 3;
    int etcd_members = 3;
    std::int64_t leader_ttl_s = 2;
    std::string bug = "none";
    // Node i lists etcd member i (modulo their number) first, and its etcd
    // client talks to that member while it answers: a test cuts one node
    // off from etcd by pausing its member. Otherwise every node lists the
    // members in one order.
    bool etcd_member_per_node = false;
    // More `serve` options for every node (limits, --snapshot-every ...).
    std::string extra_options;
    // Instead of `lockstep serve --cluster`: a shell command template per
    // node, with `{node}` (n1, n2 ...), `{port}`, `{etcd}` (the members'
    // client addresses, comma-separated; empty without members),
    // `{prefix}` (etcd keys of its own for this cluster), `{peers}` (every
    // node's 127.0.0.1:port, comma-separated), `{members}` (every node as
    // `n1=127.0.0.1:port`, comma-separated, for `serve --cluster --init
    // --members`) and the limits of docs/protocol.md (`{max_keys}` ...)
    // filled in. 0 etcd members are then allowed: a service that needs none.
    // With `{advertise}` too: the address its clients reach it at
    // (127.0.0.1:{port}, or its relay's with `relays`).
    std::string node_command;
    Limits limits;  // what the template's limits are filled with
    // Every node's etcd connections go through a relay per (node, member),
    // and its clients' through a relay of its own, which `{advertise}`,
    // `{members}` and `{peers}` name (live/fault_proxy.hpp), so that the
    // fuzzer's nemesis can cut and slow them.
    bool relays = false;
    // Wrong clocks (live/node_clocks.hpp): with a library, each node runs
    // with it preloaded and a timestamp file of its own, which starts as
    // clock_specs[node] (libfaketime's spec; "+0" when there is none) and
    // set_clock rewrites.
    std::string faketime_library;
    std::vector<std::string> clock_specs;
  };
  // Starts etcd, then the nodes, and waits until one of them leads.
  static std::unique_ptr<LockCluster> start(const Options& options, std::string& error,
                                            std::chrono::milliseconds patience = std::chrono::seconds(30));
  ~LockCluster();
  LockCluster(const LockCluster&) = delete;
  LockCluster& operator=(const LockCluster&) = delete;

  int size() const { return static_cast<int>(nodes_.size()); }
  EtcdCluster& etcd() { return *etcd_; }
  // The etcd member node `node` talks to (with etcd_member_per_node), else 0.
  int etcd_member_of(int node) const;
  bool has_etcd() const { return etcd_ != nullptr; }
  // The command node `node` runs (the template filled in).
  std::string command(int node) const;
  std::vector<client::NodeAddress> addresses() const;
  client::NodeAddress address(int node) const;
  const std::string& prefix() const { return prefix_; }
  // With Options::relays: the relays, node's link to etcd member `member`,
  // and the link its clients reach it through.
  FaultProxy* relays() { return relays_.get(); }
  int etcd_link(int node, int member) const;
  // All of the node's links to etcd, in member order.
  const std::vector<int>& etcd_links(int node) const { return etcd_links_.at(static_cast<std::size_t>(node)); }
  int client_link(int node) const;

  bool running(int node);
  // The node's process (what its command exec'd), if it runs.
  std::optional<pid_t> pid(int node) const;
  void kill(int node);    // SIGKILL
  void stop(int node);    // SIGTERM (SIGKILL a second later if it is still running)
  void pause(int node);   // SIGSTOP
  void resume(int node);  // SIGCONT
  // Starts a killed node again on its port, with the same options.
  bool restart(int node);
  // With Options::faketime_library: the node's clock from now on (within a
  // second: libfaketime reads its file at most that stale), by libfaketime's
  // spec; false when the file cannot be written.
  bool set_clock(int node, const std::string& spec);

  // The node that answers as leader, or -1 after `patience`. Asks with a
  // release of a key no client uses (a leader answers N once it commits).
  int leader(std::chrono::milliseconds patience = std::chrono::seconds(20));

  struct Status {
    std::uint64_t applied = 0;
    std::uint64_t digest = 0;
    bool leading = false;
    std::uint64_t epoch = 0;
    std::uint64_t keys = 0;
    std::uint64_t waiters = 0;
    std::uint64_t entries_written = 0;
    std::uint64_t proposals_written = 0;
    std::string line;
  };
  // Asks the node for its status line and reads it from its output.
  std::optional<Status> status(int node, std::chrono::milliseconds patience = std::chrono::seconds(5));
  std::string log_tail(int node) const;

 private:
  struct Node {
    std::string id;
    std::uint16_t port = 0;
    std::string log_path;
    int runs = 0;
    std::optional<ServerProcess> process;
  };
  LockCluster() = default;
  bool start_node(int node);

  Options options_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<FaultProxy> relays_;
  std::vector<std::vector<int>> etcd_links_;  // [node][member]
  std::vector<int> client_links_;
  std::optional<TemporaryFolder> folder_;  // the nodes' logs
  std::string prefix_;
  std::vector<Node> nodes_;
  bool set_up_relays(std::string& error);
  std::string advertise(int node) const;
  std::string clock_file(int node) const;
  std::string unclocked_command(int node) const;
};

}  // namespace lockstep::live
