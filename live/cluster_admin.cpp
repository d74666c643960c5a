#include "live/cluster_admin.hpp"

#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "drivers/etcd/membership.hpp"

namespace lockstep::live {

namespace {

using Action = ClusterAdminRequest::Action;

const char* action_name(Action action) {
  switch (action) {
    case Action::init: return "init";
    case Action::add: return "add";
    case Action::remove: return "remove";
    case Action::show: return "show";
  }
  return "?";
}

class Admin {
 public:
  Admin(const ClusterAdminRequest& request, const etcd::Target& target)
      : request_(request), target_(target), client_(target), keys_(request.prefix),
        timeout_(std::chrono::milliseconds{request.etcd_timeout_ms}) {}

  int run() {
    etcd::ClusterState state;
    std::string error;
    // etcd may be starting (a script that starts it and then this): asked
    // again until the timeout.
    const auto give_up = std::chrono::steady_clock::now() + timeout_;
    while (!etcd::read_cluster(client_, keys_, timeout_, state, error)) {
      if (error.starts_with("the cluster under")) return refuse(error);
      if (std::chrono::steady_clock::now() >= give_up) {
        return refuse(fmt::format("cannot read the cluster from etcd at {} within {} ms: {}", endpoints(),
                                  request_.etcd_timeout_ms, error));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{200});
    }
    if (auto refusal = etcd::peer_port_refusal(client_, target_, timeout_)) return refuse(*refusal);
    switch (request_.action) {
      case Action::init: return init(state);
      case Action::add: return add();
      case Action::remove: return remove();
      case Action::show: return show(state);
    }
    return 2;
  }

 private:
  std::string endpoints() const { return fmt::format("{}", fmt::join(target_.endpoints, ",")); }
  std::string where() const { return fmt::format("--prefix '{}' in etcd at {}", request_.prefix, endpoints()); }

  int refuse(const std::string& why) const {
    fmt::print(stderr, "lockstep cluster {}: {}\n", action_name(request_.action), why);
    return 2;
  }

  int init(etcd::ClusterState state) {
    const auto members = *etcd::parse_members(request_.members, error_);
    if (state.membership) {
      return refuse(fmt::format("{} holds a cluster already: {} ({}); `lockstep cluster add` and `remove` change its "
                                "members",
                                where(), state.membership->cluster_id, etcd::describe_members(state.membership->members)));
    }
    bool created = false;
    if (!etcd::create_cluster(client_, keys_, members, timeout_, state, created, error_)) return refuse(error_);
    if (!created) {
      return refuse(fmt::format("{} holds a cluster already, created meanwhile: {} ({})", where(),
                                state.membership->cluster_id, etcd::describe_members(state.membership->members)));
    }
    fmt::print("cluster {} created under {}: {}\n", state.membership->cluster_id, where(),
               etcd::describe_members(state.membership->members));
    return 0;
  }

  int add() {
    etcd::MembershipEdit edit;
    edit.edit = [&](etcd::Membership& membership, const auto&) -> std::optional<std::string> {
      for (const auto& m : membership.members) {
        if (m.node_id == request_.node_id) {
          return fmt::format("--node-id {} is a member already, at {}", m.node_id, m.advertise);
        }
        if (m.advertise == request_.advertise) {
          return fmt::format("--advertise {} is the address of member {}", m.advertise, m.node_id);
        }
      }
      membership.members.push_back({request_.node_id, request_.advertise});
      return std::nullopt;
    };
    return change(edit, fmt::format("added {} at {}", request_.node_id, request_.advertise));
  }

  int remove() {
    etcd::MembershipEdit edit;
    edit.must_not_run = {request_.node_id};
    edit.edit = [&](etcd::Membership& membership, const std::map<std::string, etcd::ClaimRecord>& claims)
        -> std::optional<std::string> {
      const auto found = std::find_if(membership.members.begin(), membership.members.end(),
                                      [&](const etcd::Member& m) { return m.node_id == request_.node_id; });
      if (found == membership.members.end()) {
        return fmt::format("--node-id {} is not a member ({})", request_.node_id,
                           etcd::describe_members(membership.members));
      }
      if (const auto running = claims.find(request_.node_id); running != claims.end()) {
        return fmt::format("--node-id {} is running ({} at {}): stop it first", request_.node_id,
                           running->second.owner, running->second.advertise);
      }
      if (membership.members.size() == 1) return fmt::format("--node-id {} is the last member", request_.node_id);
      membership.members.erase(found);
      return std::nullopt;
    };
    return change(edit, fmt::format("removed {}", request_.node_id));
  }

  int change(const etcd::MembershipEdit& edit, const std::string& done) {
    etcd::ClusterState state;
    if (!etcd::change_membership(client_, keys_, timeout_, edit, state, error_)) return refuse(error_);
    fmt::print("cluster {} under {}: {}; members: {}\n", state.membership->cluster_id, where(), done,
               etcd::describe_members(state.membership->members));
    return 0;
  }

  int show(const etcd::ClusterState& state) {
    if (!state.membership) {
      return refuse(fmt::format("{} holds no cluster: `lockstep cluster init` creates one", where()));
    }
    std::map<std::string, etcd::ClaimRecord> claims;
    if (!etcd::read_claims(client_, keys_, timeout_, claims, error_)) return refuse(error_);
    etcdserverpb::RangeRequest request;
    request.set_key(keys_.leader());
    etcdserverpb::RangeResponse response;
    std::optional<etcd::LeaderRecord> leader;
    if (client_.range(request, response, timeout_).ok() && response.kvs_size() > 0) {
      leader = etcd::decode_leader(response.kvs(0).value());
    }
    const auto count = state.membership->members.size();
    fmt::print("cluster {} under {}, {} member{}\n", state.membership->cluster_id, where(), count,
               count == 1 ? "" : "s");
    for (const auto& m : state.membership->members) {
      const auto claim = claims.find(m.node_id);
      fmt::print("{} {} {}{}\n", m.node_id, m.advertise,
                 claim == claims.end() ? std::string("not running") : "running (" + claim->second.owner + ")",
                 leader && leader->node_id == m.node_id ? ", leads" : "");
    }
    return 0;
  }

  const ClusterAdminRequest& request_;
  const etcd::Target& target_;
  etcd::Client client_;
  etcd::Keys keys_;
  etcd::Timeout timeout_;
  std::string error_;
};

}  // namespace

int run_cluster_admin(const ClusterAdminRequest& request) {
  std::string error;
  const auto target = etcd::parse_endpoints(request.etcd_endpoints, error);
  if (!target) {
    fmt::print(stderr, "lockstep cluster {}: --etcd: {}\n", action_name(request.action), error);
    return 2;
  }
  Admin admin(request, *target);
  return admin.run();
}

}  // namespace lockstep::live
