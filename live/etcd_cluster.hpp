// etcd members on loopback for tests and benchmarks: each on free ports
// with a temporary data directory, started together as one cluster, and
// stopped (and their directories removed) on every path, the destructor
// included. Members can be killed (SIGKILL), paused and restarted, and etcd's
// own leader found, for the fault tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "live/fault_proxy.hpp"
#include "live/process.hpp"

namespace lockstep::live {

class EtcdCluster {
 public:
  // Starts `members` members (1 to 7) and waits until every one answers and
  // knows a leader, for at most `patience`. Nothing (and `error` says why)
  // when that fails; what was started is stopped again.
  // With `peer_relays`, each member's peer address as the others know it is
  // a link of that proxy to its peer port (peer_link), so that a fault can
  // cut the member from its peers.
  static std::unique_ptr<EtcdCluster> start(int members, std::string& error,
                                            std::chrono::milliseconds patience = std::chrono::seconds(20),
                                            FaultProxy* peer_relays = nullptr);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  int size() const { return static_cast<int>(members_.size()); }
  // Every member's client address, comma-separated (for --etcd).
  std::string endpoints() const;
  std::string endpoint(int member) const;
  // Its peer address, which clients must not be given.
  std::string peer_endpoint(int member) const;
  // With peer relays: the link every other member reaches this one's peer
  // port through; -1 without.
  int peer_link(int member) const { return members_[static_cast<std::size_t>(member)].peer_link; }

  bool running(int member);
  std::optional<pid_t> pid(int member) const;
  void kill(int member);  // SIGKILL: no chance to clean up
  void stop(int member);  // SIGTERM (SIGKILL a second later if it is still running)
  void pause(int member);   // SIGSTOP
  void resume(int member);  // SIGCONT
  // Starts a killed member again on its ports and data directory.
  bool restart(int member);
  // The member etcd's members agree leads, or -1 within `patience`.
  int leader(std::chrono::milliseconds patience = std::chrono::seconds(10));
  // What a member printed last, for failure messages.
  std::string log_tail(int member) const;

 private:
  struct Member {
    std::string name;
    std::uint16_t client_port = 0;
    std::uint16_t peer_port = 0;
    int peer_link = -1;                 // with peer relays
    std::uint16_t advertised_peer_port = 0;  // its relay's, or peer_port
    std::string log_path;
    std::optional<ServerProcess> process;
  };
  EtcdCluster() = default;
  std::string command(int member, bool fresh) const;
  bool wait_serving(int member, std::chrono::milliseconds patience);

  std::optional<TemporaryFolder> folder_;  // the members' data and logs
  std::string token_;
  std::vector<Member> members_;
};

}  // namespace lockstep::live
