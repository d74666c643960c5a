#include "live/serve.hpp"

#include <fmt/format.h>

#include "impl/cluster/bugs.hpp"

namespace lockstep::live {

namespace {

int run_cluster_serve(ServeRequest& options) {
  if (!options.simple_only_given.empty()) {
    fmt::print(stderr, "lockstep serve: {} has no meaning with --cluster\n", options.simple_only_given.front());
    return 2;
  }
  if (options.list_bugs) {
    for (const auto& entry : cluster::cluster_bug_catalogue()) fmt::print("{:<28} {}\n", entry.name, entry.story);
    return 0;
  }
  const auto bug = cluster::cluster_bug_from_name(options.bug);
  if (!bug) {
    fmt::print(stderr, "lockstep serve: '{}' is not a bug of the cluster catalogue (lockstep serve --cluster --list-bugs lists it)\n",
               options.bug);
    return 2;
  }
  auto& c = options.cluster_config;
  // The options both modes take are parsed into simple mode's configuration.
  c.host = options.config.host;
  c.port = options.config.port;
  c.limits = options.config.limits;
  c.max_connections = options.config.max_connections;
  c.max_output_bytes = options.config.max_output_bytes;
  c.lines_per_turn = options.config.lines_per_turn;
  c.test_clock = options.config.test_clock;
  c.quiet = options.config.quiet;
  c.bug = *bug;
  if (auto error = validate(c)) {
    fmt::print(stderr, "lockstep serve: {}\n", *error);
    return 2;
  }
  return run_cluster_server(c);
}

}  // namespace

int run_serve(ServeRequest& options) {
  if (options.cluster) return run_cluster_serve(options);
  if (!options.cluster_only_given.empty()) {
    fmt::print(stderr, "lockstep serve: {} needs --cluster\n", options.cluster_only_given.front());
    return 2;
  }
  if (options.list_bugs) {
    for (const auto& entry : bug_catalogue()) fmt::print("{:<26} {}\n", entry.name, entry.story);
    return 0;
  }
  const auto bug = bug_from_name(options.bug);
  if (!bug) {
    fmt::print(stderr, "lockstep serve: '{}' is not a bug of the engine's catalogue (lockstep serve --list-bugs lists it)\n",
               options.bug);
    return 2;
  }
  options.config.bug = *bug;
  return run_server(options.config);
}

}  // namespace lockstep::live
