// `lockstep fuzz`: the options of black-box fuzzing of a live server in
// real time, in simple mode (live/fuzz_run.hpp) or on the nodes of a
// cluster (live/cluster_fuzz_run.hpp); which options were given is passed
// on, since some are refused in a mode or by another.
#include <algorithm>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/history_output_options.hpp"
#include "cmd/lockstep/limit_options.hpp"
#include "cli/validators.hpp"
#include "live/cluster_fuzz_run.hpp"
#include "live/fuzz_run.hpp"

namespace lockstep::cli {

namespace {

// `--mode cluster`'s own options: the nodes started, the nemesis, and how
// the history is read.
void add_cluster_options(CLI::App& command, live::ClusterFuzzRequest& cluster) {
  command.add_option("--exec-node", cluster.node_command,
                     fmt::format("--mode cluster: start each node with this shell command; filled in: {{node}} (n1, "
                                 "n2 ...),\n{{port}}, {{advertise}} (where its clients reach it: 127.0.0.1:{{port}}, or its relay's\n"
                                 "when the nemesis cuts links), {{etcd}} (the members --etcd-members started), {{prefix}} (etcd "
                                 "keys of this run's\nown), {{peers}} (every node's {{advertise}}), {{members}} (every "
                                 "node as\nn1={{advertise}}, for serve --cluster --init --members) and the limits\n{}",
                                 limit_placeholders));
  command.add_option("--nodes", cluster.nodes, "--mode cluster: nodes to start with --exec-node")
      ->check(whole(1, 7))
      ->capture_default_str();
  command.add_option("--etcd-members", cluster.etcd_members,
                     "--mode cluster: etcd members to start on loopback for the nodes (their addresses fill {etcd})")
      ->check(whole(1, 7));
  command.add_option("--nemesis", cluster.nemesis,
                     "--mode cluster, with --exec-node: faults to inject, comma-separated: kill (SIGKILL, started again\n"
                     "half a period later), pause (SIGSTOP, SIGCONT half a period later), restart (SIGTERM, started at\n"
                     "once), partition-node (a node cut from etcd, its clients still connected), partition-clients (a\n"
                     "node's clients cut from it), slow-etcd (every node's etcd links slowed), etcd-minority (an etcd\n"
                     "member cut from its peers, through relays of their peer ports), clock-jump (a node's\n"
                     "wall clock stepped forward or back within its error bound, through libfaketime, and back half\n"
                     "a period later), or all of them (all);\n"
                     "one per period, drawn from --seed, on a node drawn from it or on the leader of the moment. The\n"
                     "link faults go through relays on loopback, healed half a period later (the template must say\n"
                     "--advertise {advertise})");
  command.add_option("--nemesis-every-s", cluster.nemesis_every_s, "the nemesis's period")
      ->check(decimal(0.5, 86'400))
      ->capture_default_str();
  command.add_flag("--nemesis-etcd", cluster.nemesis_etcd, "the nemesis acts on the etcd members too");
  command.add_option("--nemesis-slow-ms", cluster.nemesis_slow_ms, "slow-etcd's delay, each way")
      ->check(whole_signed(1, 10'000))
      ->capture_default_str();
  command.add_flag("--nemesis-at-leader", cluster.nemesis_at_leader,
                   "every fault on a node aims at the leader of the moment; a partition-node waits (2 s at most)\n"
                   "until the leader holds keys with waiters");
  command.add_option("--clock-allowance-ms", cluster.clock_allowance_ms,
                     "--mode cluster: how far apart two node clocks may be (2*S); nodes on one machine share its clock")
      ->check(whole_signed(0, 3'600'000))
      ->capture_default_str();
  command.add_flag("--skew-clocks", cluster.skew_clocks,
                   "--mode cluster, with --exec-node: run each node under libfaketime with a wall clock of its own,\n"
                   "an offset and a drift drawn from --seed that keep it within half --clock-allowance-ms (S) of\n"
                   "the machine's for the whole run: a correct cluster conforms");
  command.add_flag("--clock-beyond-bound", cluster.clock_beyond_bound,
                   "--mode cluster, with --exec-node: as --skew-clocks, but each clock's error ten times wider than\n"
                   "the allowance declares: a correct cluster may then break lease safety, and the checker says so");
  command.add_option("--max-lateness-ms", cluster.max_lateness_ms,
                     "--mode cluster: fail when an Expire, a Timeout or a caused answer comes this much past its\n"
                     "deadline and the allowance (without it, lateness is only reported)")
      ->check(whole_signed(0, 86'400'000));
}

// The target, as given or started: --exec, the limits it is assumed to
// have, and the ranges its leases and waits are asked in.
void add_server_options(CLI::App& fuzz, live::FuzzRequest& options) {
  fuzz.add_option("--exec", options.fuzz.command,
                  fmt::format("start the server with this shell command (`exec` it: docs/protocol.md, \"Running "
                              "under the\ntools\"); filled in: {{port}}, {{state_file}} (where it keeps its token mark "
                              "across restarts)\nand the limits\n{}",
                              limit_placeholders));
  add_limit_options(fuzz, options.fuzz.limits);
  fuzz.add_option("--lease-ms", options.lease_range,
                  "A..B: every lease asked is in this range, spread within it (short ones, ones near the sweep\n"
                  "period, the rest log-uniform); default 1..max(400, 1.5 sweeps)")
      ->check(ms_range(1));
  fuzz.add_option("--wait-ms", options.wait_range,
                  "A..B: every wait asked is in this range (0 is a try-lock); default 0..1500")
      ->check(ms_range(0));
  fuzz.add_flag("--no-limits", options.fuzz.clear_of_limits,
                "the target has no limit on keys and waiters: assume none (any B is a violation), and send no\n"
                "over-long line and no lease past max_lease_ms");
}

// The workload: its clients, keys, length, seed and pace, and how late an
// answer may be.
void add_workload_options(CLI::App& fuzz, live::FuzzOptions& options) {
  fuzz.add_option("--clients", options.clients, "connections open at once")
      ->check(whole(1, 1'000))
      ->capture_default_str();
  fuzz.add_option("--keys", options.keys, "keys the workload uses")->check(whole(1, 1'000'000))->capture_default_str();
  fuzz.add_option("--duration-s", options.duration_s, "how long to fuzz")
      ->check(decimal(1, 86'400))
      ->capture_default_str();
  fuzz.add_option("--seed", options.seed, "seed of the workload")->check(whole(0))->capture_default_str();
  fuzz.add_option("--tolerance-ms", options.tolerance_ms,
                  "how late an answer caused by time or another request may arrive")
      ->check(whole_signed(0, 60'000))
      ->capture_default_str();
  fuzz.add_option("--restart-every-s", options.restart_every_s,
                  "kill and restart the target this often (with --exec): tokens must keep increasing")
      ->check(decimal(0, 86'400))
      ->capture_default_str();
  fuzz.add_option("--mean-gap-ms", options.mean_gap_ms,
                  "mean time between one client's requests (0: from --clients)")
      ->check(decimal(0, 60'000))
      ->capture_default_str();
  fuzz.add_flag("--strict-syntax", options.strict_syntax,
                "also send lines only this project's strict wire syntax refuses (two spaces, token 0, an empty line)");
}

// Which options and which limits the command line gave, by flag and by name.
void record_given(const CLI::App& fuzz, live::FuzzRequest& options) {
  for (const auto* option : fuzz.get_options()) {
    if (option->count() > 0) options.given.push_back(option->get_name());
  }
  for (const auto name : limit_names) {
    std::string flag = "--" + std::string(name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (fuzz.get_option(flag)->count() > 0) options.limits_given.emplace_back(name);
  }
}

}  // namespace

void add_fuzz_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<live::FuzzRequest>();
  auto* fuzz = app.add_subcommand(
      "fuzz",
      "Black-box fuzzing of a live server in real time: a random concurrent workload from --seed,\n"
      "recorded as a history and checked against the protocol (docs/protocol.md, \"Black box, in\n"
      "real time\"). Exit 0 conforms, 1 a violation, 2 unknown.\n"
      "Fitting it to a service: the limits assumed must be the target's. With --target, those not\n"
      "given are the protocol's defaults (a lockstep serve started without options); with --exec,\n"
      "the fuzzer's edge-seeking defaults (6 keys, 3 waiters per key, 24 waiters, sweep 1000 ms,\n"
      "leases and waits up to 10 s), filled into the command. --lease-ms and --wait-ms keep the\n"
      "workload's leases and waits in a range the service accepts; --no-limits is for a service\n"
      "without limits on keys and waiters (any B is then a violation, and no line past a maximum\n"
      "is sent); --tolerance-ms is how late its timers may fire.\n"
      "--mode cluster fuzzes the nodes of a cluster (--target HOST:PORT,... or --exec-node with\n"
      "--nodes and --etcd-members), with sessions, redirects, retries and a nemesis\n"
      "(docs/testing-your-server.md, \"Fuzzing a cluster\").");
  fuzz->add_option("--mode", options->mode,
                   "simple: one server (the default); cluster: the nodes of a cluster, with sessions, redirects and\n"
                   "retries, read by cluster mode's rules (see --exec-node, --nemesis)")
      ->check(one_of({"simple", "cluster"}, "the modes", "simple or cluster"))
      ->capture_default_str();
  fuzz->add_option("--target", options->target,
                   "HOST:PORT of a running server; with --mode cluster, its nodes: HOST:PORT,HOST:PORT,...")
      ->check(host_and_port_list());
  add_cluster_options(*fuzz, options->cluster);
  add_server_options(*fuzz, *options);
  add_workload_options(*fuzz, options->fuzz);
  fuzz->add_option("--history", options->outputs.history_path, "write the recorded history (NDJSON) here")
      ->check(writable_file());
  add_output_options(*fuzz, options->outputs);
  fuzz->callback([options, fuzz, &run] {
    record_given(*fuzz, *options);
    run = [options] {
      return options->mode == "cluster" ? live::run_cluster_fuzz_request(*options) : live::run_fuzz_request(*options);
    };
  });
}

}  // namespace lockstep::cli
