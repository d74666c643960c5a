// `lockstep serve`, once its options are parsed: the bug catalogue listed,
// or the bug named looked up in the catalogue of the mode, and the engine's
// TCP server (drivers/server/server.hpp) or, with --cluster, one node of a
// cluster on etcd (drivers/server/cluster_server.hpp) run until SIGTERM.
#pragma once

#include <string>
#include <vector>

#include "drivers/server/cluster_server.hpp"
#include "drivers/server/server.hpp"

namespace lockstep::live {

struct ServeRequest {
  ServerConfig config;  // with the options both modes take
  std::string bug = "none";
  bool list_bugs = false;
  bool cluster = false;
  ClusterServerConfig cluster_config;  // the options of cluster mode alone
  // Options of one mode given in the other, by their flag: refused.
  std::vector<std::string> simple_only_given, cluster_only_given;
};

// Returns the exit code: 0 after a stop by signal or a listing, 2 for a
// configuration the server cannot run with.
int run_serve(ServeRequest& options);

}  // namespace lockstep::live
