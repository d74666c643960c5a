// `lockstep serve`: the options of the engine behind a TCP server, or with
// --cluster of one node of a cluster on etcd (live/serve.hpp); the options
// of one mode only are passed on by name when given, to be refused in the
// other.
#include <memory>
#include <vector>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/etcd_options.hpp"
#include "cmd/lockstep/limit_options.hpp"
#include "cli/validators.hpp"
#include "impl/cluster/bugs.hpp"
#include "impl/cluster/lock_machine.hpp"
#include "impl/protocol.hpp"
#include "live/serve.hpp"

namespace lockstep::cli {

namespace {

// Options of one mode only, refused in the other.
struct ModeOptions {
  std::vector<const CLI::Option*> simple_only, cluster_only;
};

// Either catalogue's names: which one applies is known once --cluster is.
std::vector<std::string> bug_names() {
  std::vector<std::string> names{"none"};
  for (const auto& entry : bug_catalogue()) names.emplace_back(entry.name);
  for (const auto& entry : cluster::cluster_bug_catalogue()) names.emplace_back(entry.name);
  return names;
}

// Cluster mode (docs/running-a-cluster.md): one node of a cluster whose
// log and election are kept in etcd.
void add_cluster_options(CLI::App& command, live::ServeRequest& options, std::vector<const CLI::Option*>& cluster_only) {
  auto& k = options.cluster_config;
  command.add_flag("--cluster", options.cluster,
                   "serve as one node of a cluster on etcd (docs/protocol.md, cluster nodes; "
                   "docs/running-a-cluster.md)");
  const auto cluster_option = [&](CLI::Option* option) {
    cluster_only.push_back(option);
    return option;
  };
  cluster_option(command.add_option("--etcd", k.etcd_endpoints,
                                    "etcd's client addresses, host:port separated by commas (IPv4, or one host name)")
                     ->check(etcd_endpoints()));
  cluster_option(command.add_option("--node-id", k.node_id,
                                    "this node's id: a member of the cluster, run by one process at a time")
                     ->check(node_id()));
  cluster_option(command.add_option("--advertise", k.advertise,
                                    "host:port where clients reach this node; followers redirect to the leader's")
                     ->check(host_and_port()));
  cluster_option(command.add_option("--prefix", k.prefix,
                                    "the etcd key prefix of this cluster (its membership, log, election and snapshots)")
                     ->check(etcd_prefix())
                     ->capture_default_str());
  cluster_option(command.add_flag("--init", k.init,
                                  "create the cluster under --prefix if it holds none (otherwise a prefix without a "
                                  "cluster is refused; `lockstep cluster init` creates one too)"));
  cluster_option(command.add_option("--members", k.members,
                                    "with --init: the cluster's members, ID=HOST:PORT,... (default: this node alone)")
                     ->check(cluster_members()));
  cluster_option(command.add_option("--leader-ttl-s", k.leader_ttl_s,
                                    "the leader's etcd lease: how soon a dead or paused leader is replaced")
                     ->check(whole_signed(1, 3'600))
                     ->capture_default_str());
  cluster_option(command.add_option("--etcd-timeout-ms", k.etcd_timeout_ms,
                                    "deadline of every etcd call, and how long start-up waits for etcd")
                     ->check(whole_signed(100, 600'000))
                     ->capture_default_str());
  cluster_option(command.add_option("--session-window", k.sessions.window,
                                    "requests remembered per client for at-most-once retries")
                     ->check(whole(1, 1'024))
                     ->capture_default_str());
  cluster_option(command.add_option("--session-clients-max", k.sessions.clients_max,
                                    "clients whose sessions are kept, the least recent evicted")
                     ->check(whole(1, 10'000'000))
                     ->capture_default_str());
  cluster_option(command.add_option("--waiter-grace-ms", k.waiter_grace_ms,
                                    "how long a waiter whose leader changed is kept for its client's retry before it "
                                    "is dropped (docs/protocol.md, \"Waiters and leader changes\")")
                     ->check(whole_signed(0, cluster::waiter_grace_max.value))
                     ->capture_default_str());
  cluster_option(command.add_option("--max-in-flight", k.in_flight_max,
                                    "requests proposed and not yet applied; past it E")
                     ->check(whole(1, 10'000'000))
                     ->capture_default_str());
  cluster_option(command.add_option("--snapshot-every", k.snapshot_every,
                                    "log positions applied between two snapshots stored in etcd (0: never)")
                     ->check(whole(0, 1'000'000'000))
                     ->capture_default_str());
}

}  // namespace

void add_serve_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<live::ServeRequest>();
  auto modes = std::make_shared<ModeOptions>();
  auto& c = options->config;
  auto* command = app.add_subcommand(
      "serve",
      "Serve the lock protocol (docs/protocol.md) over TCP: one thread, one event loop, every\n"
      "resource bounded. Logs one line at start and one at stop; SIGTERM or SIGINT stops it\n"
      "(exit 0). A configuration it cannot run with is refused at start (exit 2). With --cluster,\n"
      "one node of a cluster on etcd; SIGUSR1 prints a status line with the applied index and\n"
      "the digest of the lock table.");
  command->add_option("--host", c.host, "IPv4 address to listen on")->check(ipv4_address())->capture_default_str();
  command->add_option("--port", c.port, "TCP port (0: any free port, printed at start)")
      ->check(whole(0, 65535))
      ->capture_default_str();
  add_limit_options(*command, c.limits);
  modes->simple_only.push_back(command->get_option("--sweep-ms"));  // cluster mode has no sweep
  command->add_option("--max-connections", c.max_connections,
                      "connections at most; past it a new one is answered E and closed")
      ->check(whole(1, 1'000'000))
      ->capture_default_str();
  command->add_option("--max-output-bytes", c.max_output_bytes,
                      "responses held for a client that does not read before it is closed (at least the "
                      "longest response line)")
      ->check(whole(response_line_bytes_max, std::uint64_t{1} << 30))
      ->capture_default_str();
  command->add_option("--lines-per-turn", c.lines_per_turn, "lines of one connection handled per loop turn")
      ->check(whole(1, 1'000'000))
      ->capture_default_str();
  command->add_flag("--test-clock", c.test_clock,
                    "a clock that starts at 0 and moves only on `C <now_ms>`; `X` ends a connection "
                    "(docs/protocol.md, \"Exact, with a test clock\")");
  modes->simple_only.push_back(
      command
          ->add_option("--state-file", c.state_file,
                       "file that keeps the token mark, so tokens stay increasing across restarts")
          ->check(state_file()));
  command->add_option("--inject-bug", options->bug,
                      "serve a deliberately broken engine (see --list-bugs); with --cluster, a bug of the cluster "
                      "catalogue (see --cluster --list-bugs)")
      ->check(one_of(bug_names(), "the bug catalogues",
                     "lockstep serve --list-bugs lists the engine's, lockstep serve --cluster --list-bugs the cluster's"))
      ->capture_default_str();
  command->add_flag("--list-bugs", options->list_bugs,
                    "list the catalogue of injectable bugs (with --cluster, the cluster's) and exit");
  add_cluster_options(*command, *options, modes->cluster_only);
  command->add_flag("--quiet", c.quiet, "no start and stop lines");
  command->callback([options, modes, &run] {
    for (const auto* option : modes->simple_only) {
      if (option->count() > 0) options->simple_only_given.push_back(option->get_name());
    }
    for (const auto* option : modes->cluster_only) {
      if (option->count() > 0) options->cluster_only_given.push_back(option->get_name());
    }
    run = [options] { return live::run_serve(*options); };
  });
}

}  // namespace lockstep::cli
