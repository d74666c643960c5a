#include "live/etcd_cluster.hpp"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <set>
#include <thread>

#include <fmt/format.h>

#include "client/line_socket.hpp"
#include "drivers/etcd/client.hpp"

namespace lockstep::live {

namespace {

// Ports that were free and that no member of this process took yet.
std::optional<std::uint16_t> fresh_port(std::set<std::uint16_t>& taken) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    const auto port = client::pick_free_port();
    if (port && taken.insert(*port).second) return port;
  }
  return std::nullopt;
}

}  // namespace

std::unique_ptr<EtcdCluster> EtcdCluster::start(int members, std::string& error, std::chrono::milliseconds patience,
                                                FaultProxy* peer_relays) {
  if (members < 1 || members > 7) {
    error = "an etcd cluster of 1 to 7 members";
    return nullptr;
  }
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster());
  auto folder = TemporaryFolder::create("lockstep-etcd");
  if (!folder) {
    error = "cannot create a temporary directory for etcd";
    return nullptr;
  }
  cluster->folder_.emplace(std::move(*folder));
  cluster->token_ = fmt::format("lockstep-{}-{}", getpid(), cluster->folder_->suffix());
  std::set<std::uint16_t> taken;
  for (int i = 0; i < members; ++i) {
    Member member;
    member.name = fmt::format("m{}", i);
    const auto client_port = fresh_port(taken);
    const auto peer_port = fresh_port(taken);
    if (!client_port || !peer_port) {
      error = "no free ports for etcd";
      return nullptr;
    }
    member.client_port = *client_port;
    member.peer_port = *peer_port;
    member.advertised_peer_port = *peer_port;
    if (peer_relays) {
      const auto link = peer_relays->add_link(*peer_port, error);
      if (!link) return nullptr;
      member.peer_link = *link;
      member.advertised_peer_port = peer_relays->port(*link);
    }
    member.log_path = fmt::format("{}/{}.log", cluster->folder_->path(), member.name);
    cluster->members_.push_back(std::move(member));
  }
  for (int i = 0; i < members; ++i) {
    auto& member = cluster->members_[static_cast<std::size_t>(i)];
    auto process = ServerProcess::start(cluster->command(i, true), member.log_path);
    if (process) member.process.emplace(std::move(*process));
    if (!member.process) {
      error = "cannot start etcd";
      return nullptr;
    }
  }
  const auto give_up = std::chrono::steady_clock::now() + patience;
  for (int i = 0; i < members; ++i) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    if (!cluster->wait_serving(i, std::max(left, std::chrono::milliseconds{1}))) {
      error = fmt::format("etcd member {} did not start within {} ms: {}", i, patience.count(), cluster->log_tail(i));
      return nullptr;
    }
  }
  return cluster;
}

EtcdCluster::~EtcdCluster() {
  for (auto& member : members_) {
    if (member.process) member.process->stop();
  }
  folder_.reset();  // after every member that wrote into it
}

std::string EtcdCluster::command(int index, bool fresh) const {
  const auto& member = members_[static_cast<std::size_t>(index)];
  std::string initial;
  for (const auto& other : members_) {
    if (!initial.empty()) initial += ',';
    initial += fmt::format("{}=http://127.0.0.1:{}", other.name, other.advertised_peer_port);
  }
  return fmt::format(
      "exec etcd --name {0} --data-dir {1}/{0}.data --listen-client-urls http://127.0.0.1:{2} "
      "--advertise-client-urls http://127.0.0.1:{2} --listen-peer-urls http://127.0.0.1:{3} "
      "--initial-advertise-peer-urls http://127.0.0.1:{7} --initial-cluster {4} --initial-cluster-state {5} "
      "--initial-cluster-token {6} --logger zap --log-outputs stderr --log-level warn",
      member.name, folder_->path(), member.client_port, member.peer_port, initial, fresh ? "new" : "existing", token_,
      member.advertised_peer_port);
}

bool EtcdCluster::wait_serving(int index, std::chrono::milliseconds patience) {
  std::string error;
  const auto target = etcd::parse_endpoints(endpoint(index), error);
  etcd::Client client(*target);
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < give_up) {
    auto& member = members_[static_cast<std::size_t>(index)];
    if (!member.process || !member.process->running()) return false;
    etcdserverpb::StatusResponse status;
    if (client.status(status, std::chrono::milliseconds{500}).ok() && status.leader() != 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return false;
}

std::string EtcdCluster::endpoints() const {
  std::string all;
  for (int i = 0; i < size(); ++i) {
    if (i > 0) all += ',';
    all += endpoint(i);
  }
  return all;
}

std::string EtcdCluster::endpoint(int member) const {
  return fmt::format("127.0.0.1:{}", members_[static_cast<std::size_t>(member)].client_port);
}

std::string EtcdCluster::peer_endpoint(int member) const {
  return fmt::format("127.0.0.1:{}", members_[static_cast<std::size_t>(member)].peer_port);
}

std::optional<pid_t> EtcdCluster::pid(int member) const {
  const auto& process = members_[static_cast<std::size_t>(member)].process;
  if (!process) return std::nullopt;
  return process->pid();
}

bool EtcdCluster::running(int member) {
  auto& process = members_[static_cast<std::size_t>(member)].process;
  return process && process->running();
}

void EtcdCluster::kill(int member) {
  auto& process = members_[static_cast<std::size_t>(member)].process;
  if (!process) return;
  process->send_signal(SIGKILL);
  process->stop();  // reaps it
  process.reset();
}

void EtcdCluster::stop(int member) {
  auto& process = members_[static_cast<std::size_t>(member)].process;
  if (!process) return;
  process->send_signal(SIGCONT);
  process->stop();
  process.reset();
}

void EtcdCluster::pause(int member) {
  auto& process = members_[static_cast<std::size_t>(member)].process;
  if (process) process->send_signal(SIGSTOP);
}

void EtcdCluster::resume(int member) {
  auto& process = members_[static_cast<std::size_t>(member)].process;
  if (process) process->send_signal(SIGCONT);
}

bool EtcdCluster::restart(int member) {
  auto& m = members_[static_cast<std::size_t>(member)];
  if (m.process && m.process->running()) return true;
  m.process.reset();
  auto process = ServerProcess::start(command(member, false), m.log_path + ".restarted");
  if (!process) return false;
  m.process.emplace(std::move(*process));
  return wait_serving(member, std::chrono::seconds(20));
}

int EtcdCluster::leader(std::chrono::milliseconds patience) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < give_up) {
    for (int i = 0; i < size(); ++i) {
      if (!running(i)) continue;
      std::string error;
      etcd::Client client(*etcd::parse_endpoints(endpoint(i), error));
      etcdserverpb::StatusResponse status;
      if (client.status(status, std::chrono::milliseconds{500}).ok() && status.leader() != 0 &&
          status.leader() == status.header().member_id()) {
        return i;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return -1;
}

std::string EtcdCluster::log_tail(int member) const {
  const auto& m = members_[static_cast<std::size_t>(member)];
  if (m.process) return m.process->log_tail();
  return {};
}

}  // namespace lockstep::live
