// `lockstep cluster init|add|remove|show`: a cluster's identity and
// membership in etcd, for the operator (live/cluster_admin.hpp;
// docs/running-a-cluster.md).
#include <memory>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/etcd_options.hpp"
#include "cli/validators.hpp"
#include "live/cluster_admin.hpp"

namespace lockstep::cli {

namespace {

using Action = live::ClusterAdminRequest::Action;

CLI::App* add_action(CLI::App& cluster, const std::string& name, const std::string& description, Action action,
                     std::function<int()>& run) {
  auto request = std::make_shared<live::ClusterAdminRequest>();
  request->action = action;
  auto* command = cluster.add_subcommand(name, description);
  command->add_option("--etcd", request->etcd_endpoints, "etcd's client addresses, host:port, comma-separated")
      ->required()
      ->check(etcd_endpoints());
  command->add_option("--prefix", request->prefix, "the etcd key prefix of the cluster (as serve --cluster --prefix)")
      ->check(etcd_prefix())
      ->capture_default_str();
  command->add_option("--etcd-timeout-ms", request->etcd_timeout_ms, "the deadline of every etcd call")
      ->check(whole_signed(100, 600'000))
      ->capture_default_str();
  if (action == Action::init) {
    command->add_option("--members", request->members, "the members: ID=HOST:PORT,... (the address clients reach each at)")
        ->required()
        ->check(cluster_members());
  }
  if (action == Action::add || action == Action::remove) {
    command->add_option("--node-id", request->node_id, "the member's node id")->required()->check(node_id());
  }
  if (action == Action::add) {
    command->add_option("--advertise", request->advertise, "the address clients reach the new member at, HOST:PORT")
        ->required()
        ->check(host_and_port());
  }
  command->callback([request, &run] { run = [request] { return live::run_cluster_admin(*request); }; });
  return command;
}

}  // namespace

void add_cluster_command(CLI::App& app, std::function<int()>& run) {
  auto* cluster = app.add_subcommand(
      "cluster",
      "A cluster's identity and membership in etcd (docs/running-a-cluster.md): created once\n"
      "with its members, before its nodes start (`serve --cluster` refuses a prefix without a\n"
      "cluster, a node id that is not a member, and an id a running process holds).");
  cluster->require_subcommand(1);
  add_action(*cluster, "init", "Create the cluster under --prefix, with its members; refused if it holds one.",
             Action::init, run);
  add_action(*cluster, "add", "Add a member (its node id and address).", Action::add, run);
  add_action(*cluster, "remove", "Remove a member whose node is not running.", Action::remove, run);
  add_action(*cluster, "show", "Print the cluster, its members, which run, and which leads.", Action::show, run);
}

}  // namespace lockstep::cli
