#include "live/lock_cluster.hpp"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "client/line_socket.hpp"
#include "live/node_clocks.hpp"

namespace lockstep::live {

namespace {

using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The value of `name=` in a status line.
std::optional<std::string> field(const std::string& line, const std::string& name) {
  const auto at = line.find(" " + name + "=");
  if (at == std::string::npos) return std::nullopt;
  const auto begin = at + name.size() + 2;
  return line.substr(begin, line.find(' ', begin) - begin);
}

}  // namespace

std::unique_ptr<LockCluster> LockCluster::start(const Options& options, std::string& error,
                                                std::chrono::milliseconds patience) {
  std::unique_ptr<LockCluster> cluster(new LockCluster());
  cluster->options_ = options;
  // The relays first, when asked: the etcd members reach each other through
  // them too (etcd-minority cuts one from its peers).
  if (options.relays) {
    cluster->relays_ = FaultProxy::start(error);
    if (!cluster->relays_) return nullptr;
  }
  if (options.etcd_members > 0 || options.node_command.empty()) {
    cluster->etcd_ = EtcdCluster::start(options.etcd_members, error, std::chrono::seconds(20), cluster->relays_.get());
    if (!cluster->etcd_) return nullptr;
  }
  auto folder = TemporaryFolder::create("lockstep-cluster");
  if (!folder) {
    error = "cannot create a temporary directory";
    return nullptr;
  }
  cluster->folder_.emplace(std::move(*folder));
  cluster->prefix_ = fmt::format("lockstep-{}-{}", getpid(), cluster->folder_->suffix());
  std::set<std::uint16_t> taken;
  for (int i = 0; i < options.nodes; ++i) {
    Node node;
    node.id = fmt::format("n{}", i + 1);
    do {
      const auto port = client::pick_free_port();
      if (!port) {
        error = "no free port";
        return nullptr;
      }
      node.port = *port;
    } while (!taken.insert(node.port).second);
    node.log_path = fmt::format("{}/{}.log", cluster->folder_->path(), node.id);
    cluster->nodes_.push_back(std::move(node));
  }
  if (options.relays && !cluster->set_up_relays(error)) return nullptr;
  for (int i = 0; !options.faketime_library.empty() && i < options.nodes; ++i) {
    const auto spec = static_cast<std::size_t>(i) < options.clock_specs.size() ? options.clock_specs[i] : "+0";
    if (!cluster->set_clock(i, spec)) {
      error = fmt::format("cannot write {}", cluster->clock_file(i));
      return nullptr;
    }
  }
  for (int i = 0; i < options.nodes; ++i) {
    if (!cluster->start_node(i)) {
      error = fmt::format("cannot start node {}", i);
      return nullptr;
    }
  }
  const auto give_up = std::chrono::steady_clock::now() + patience;
  if (cluster->leader(patience) < 0) {
    error = fmt::format("no node leads within {} ms; node 1 said:\n{}", patience.count(), cluster->log_tail(0));
    return nullptr;
  }
  // Up once every node serves too: a node listens only after it has caught
  // up with etcd, and one still catching up when a test cuts etcd's majority
  // would never listen (a CI run saw a follower silent for 8 s that way).
  for (int i = 0; i < options.nodes; ++i) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    const auto port = cluster->nodes_[static_cast<std::size_t>(i)].port;
    if (!client::LineSocket::connect("127.0.0.1", port, std::max(left, std::chrono::milliseconds{1}))) {
      error = fmt::format("node {} does not accept connections within {} ms; it said:\n{}", i + 1, patience.count(),
                          cluster->log_tail(i));
      return nullptr;
    }
  }
  return cluster;
}

bool LockCluster::set_up_relays(std::string& error) {
  for (int i = 0; i < size(); ++i) {
    const auto to_clients = relays_->add_link(nodes_[static_cast<std::size_t>(i)].port, error);
    if (!to_clients) return false;
    client_links_.push_back(*to_clients);
    etcd_links_.emplace_back();
    for (int m = 0; etcd_ && m < etcd_->size(); ++m) {
      const auto endpoint = etcd_->endpoint(m);
      const auto port = static_cast<std::uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
      const auto to_etcd = relays_->add_link(port, error);
      if (!to_etcd) return false;
      etcd_links_.back().push_back(*to_etcd);
    }
  }
  return true;
}

int LockCluster::etcd_link(int node, int member) const {
  return etcd_links_.at(static_cast<std::size_t>(node)).at(static_cast<std::size_t>(member));
}

int LockCluster::client_link(int node) const { return client_links_.at(static_cast<std::size_t>(node)); }

std::string LockCluster::advertise(int node) const {
  if (relays_) return relays_->address(client_link(node));
  return fmt::format("127.0.0.1:{}", nodes_[static_cast<std::size_t>(node)].port);
}

LockCluster::~LockCluster() {
  for (auto& node : nodes_) {
    if (node.process) node.process->stop();
  }
  etcd_.reset();
  relays_.reset();  // after the nodes and etcd, whose peers talk through them too
  folder_.reset();  // after every process that wrote into it
}

int LockCluster::etcd_member_of(int node) const {
  return options_.etcd_member_per_node && etcd_ ? node % etcd_->size() : 0;
}

std::string LockCluster::clock_file(int node) const {
  return fmt::format("{}/{}.clock", folder_->path(), nodes_[static_cast<std::size_t>(node)].id);
}

bool LockCluster::set_clock(int node, const std::string& spec) {
  // Written whole, then renamed over the old one: libfaketime never reads
  // half a spec.
  const auto path = clock_file(node);
  {
    std::ofstream file(path + ".new", std::ios::trunc);
    file << spec << '\n';
    if (!file.flush()) return false;
  }
  return std::rename((path + ".new").c_str(), path.c_str()) == 0;
}

std::string LockCluster::command(int index) const {
  const auto clocked = options_.faketime_library.empty()
                           ? std::string()
                           : faketime_environment(options_.faketime_library, clock_file(index));
  return clocked + unclocked_command(index);
}

std::string LockCluster::unclocked_command(int index) const {
  const auto& node = nodes_[static_cast<std::size_t>(index)];
  std::string endpoints;
  for (int i = 0; etcd_ && i < etcd_->size(); ++i) {
    const int member = (etcd_member_of(index) + i) % etcd_->size();
    endpoints += (i == 0 ? "" : ",") + (relays_ ? relays_->address(etcd_link(index, member)) : etcd_->endpoint(member));
  }
  std::string peers, members;
  for (int i = 0; i < size(); ++i) {
    peers += fmt::format("{}{}", peers.empty() ? "" : ",", advertise(i));
    members += fmt::format("{}{}={}", members.empty() ? "" : ",", nodes_[static_cast<std::size_t>(i)].id, advertise(i));
  }
  if (options_.node_command.empty()) {
    // Every node creates the cluster if it is not there yet, with all of
    // them as its members: the first one to start writes it.
    return fmt::format(
        "exec {} serve --cluster --etcd {} --init --members {} --node-id {} --advertise {} --port {} "
        "--prefix {} --leader-ttl-s {} --inject-bug {} {}",
        options_.lockstep_binary, endpoints, members, node.id, advertise(index), node.port, prefix_,
        options_.leader_ttl_s, options_.bug, options_.extra_options);
  }
  auto values = template_values(node.port, options_.limits);
  values["advertise"] = advertise(index);
  values["node"] = node.id;
  values["etcd"] = endpoints;
  values["prefix"] = prefix_;
  values["peers"] = peers;
  values["members"] = members;
  return fill_template(options_.node_command, values);
}

bool LockCluster::start_node(int index) {
  auto& node = nodes_[static_cast<std::size_t>(index)];
  const auto command = this->command(index);
  // Each run writes a log of its own, so the status of this run is read.
  ++node.runs;
  node.log_path = fmt::format("{}/{}.{}.log", folder_->path(), node.id, node.runs);
  node.process.reset();
  auto process = ServerProcess::start(command, node.log_path);
  if (!process) return false;
  node.process.emplace(std::move(*process));
  return true;
}

std::vector<client::NodeAddress> LockCluster::addresses() const {
  std::vector<client::NodeAddress> all;
  for (int i = 0; i < size(); ++i) all.push_back(address(i));
  return all;
}

client::NodeAddress LockCluster::address(int node) const {
  if (relays_) return {"127.0.0.1", relays_->port(client_link(node))};
  return {"127.0.0.1", nodes_[static_cast<std::size_t>(node)].port};
}

std::optional<pid_t> LockCluster::pid(int node) const {
  const auto& process = nodes_[static_cast<std::size_t>(node)].process;
  if (!process) return std::nullopt;
  return process->pid();
}

bool LockCluster::running(int node) {
  auto& process = nodes_[static_cast<std::size_t>(node)].process;
  return process && process->running();
}

void LockCluster::kill(int node) {
  auto& process = nodes_[static_cast<std::size_t>(node)].process;
  if (!process) return;
  process->send_signal(SIGKILL);
  process->stop();
  process.reset();
}

void LockCluster::stop(int node) {
  auto& process = nodes_[static_cast<std::size_t>(node)].process;
  if (!process) return;
  process->send_signal(SIGCONT);  // a paused node could not act on SIGTERM
  process->stop();
  process.reset();
}

void LockCluster::pause(int node) {
  auto& process = nodes_[static_cast<std::size_t>(node)].process;
  if (process) process->send_signal(SIGSTOP);
}

void LockCluster::resume(int node) {
  auto& process = nodes_[static_cast<std::size_t>(node)].process;
  if (process) process->send_signal(SIGCONT);
}

bool LockCluster::restart(int node) {
  if (running(node)) return true;
  if (!start_node(node)) return false;
  // Up once it accepts connections.
  return client::LineSocket::connect("127.0.0.1", nodes_[static_cast<std::size_t>(node)].port, 20s).has_value();
}

int LockCluster::leader(std::chrono::milliseconds patience) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < give_up) {
    bool any_running = false;
    for (int i = 0; i < size(); ++i) {
      if (!running(i)) continue;
      any_running = true;
      auto socket = client::LineSocket::connect("127.0.0.1", nodes_[static_cast<std::size_t>(i)].port, 200ms);
      if (!socket) continue;
      socket->send_line("R lockstep-leader-probe 1");
      std::string line;
      if (socket->read_line(line, 2s) == client::LineSocket::Status::line && line.starts_with("N ")) return i;
    }
    if (!any_running) return -1;  // every node exited: none is going to lead
    std::this_thread::sleep_for(50ms);
  }
  return -1;
}

std::optional<LockCluster::Status> LockCluster::status(int index, std::chrono::milliseconds patience) {
  auto& node = nodes_[static_cast<std::size_t>(index)];
  if (!node.process || !node.process->running()) return std::nullopt;
  // Complete status lines in one reading of the log (counted and read from
  // the same text: the node may be writing meanwhile).
  const auto count_lines = [](const std::string& text) {
    std::size_t count = 0;
    for (std::size_t at = text.find("status node="); at != std::string::npos; at = text.find("status node=", at + 1)) {
      if (text.find('\n', at) != std::string::npos) ++count;
    }
    return count;
  };
  const auto before = count_lines(read_file(node.log_path));
  node.process->send_signal(SIGUSR1);
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < give_up) {
    const auto text = read_file(node.log_path);
    if (count_lines(text) > before) {
      // The last complete one.
      std::size_t at = 0;
      for (auto found = text.find("status node="); found != std::string::npos;
           found = text.find("status node=", found + 1)) {
        if (text.find('\n', found) != std::string::npos) at = found;
      }
      const auto line = text.substr(at, text.find('\n', at) - at);
      Status status;
      status.line = line;
      status.applied = std::stoull(field(line, "applied").value_or("0"));
      status.digest = std::stoull(field(line, "digest").value_or("0"), nullptr, 16);
      status.leading = field(line, "leading") == "yes";
      status.epoch = std::stoull(field(line, "epoch").value_or("0"));
      status.keys = std::stoull(field(line, "keys").value_or("0"));
      status.waiters = std::stoull(field(line, "waiters").value_or("0"));
      status.entries_written = std::stoull(field(line, "entries_written").value_or("0"));
      status.proposals_written = std::stoull(field(line, "proposals_written").value_or("0"));
      return status;
    }
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

std::string LockCluster::log_tail(int node) const {
  auto text = read_file(nodes_[static_cast<std::size_t>(node)].log_path);
  if (text.size() > 3000) text = text.substr(text.size() - 3000);
  return text;
}

}  // namespace lockstep::live
