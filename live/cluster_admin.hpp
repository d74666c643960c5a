// `lockstep cluster init|add|remove|show`: a cluster's identity and
// membership in etcd (drivers/etcd/membership.hpp), made and changed by an
// operator before and between the nodes' runs: init writes the identity and
// the members once, add and remove change the members (remove refuses a
// node whose process runs), show prints them with the nodes running and the
// one that leads. Every refusal is one line naming the option at fault,
// exit 2.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep::live {

struct ClusterAdminRequest {
  enum class Action { init, add, remove, show };
  Action action = Action::show;
  std::string etcd_endpoints;
  std::string prefix = "lockstep";
  std::int64_t etcd_timeout_ms = 5'000;
  std::string members;    // init: ID=HOST:PORT,...
  std::string node_id;    // add, remove
  std::string advertise;  // add
};

// Returns the exit code: 0 done, 2 refused or etcd not reached.
int run_cluster_admin(const ClusterAdminRequest& request);

}  // namespace lockstep::live
