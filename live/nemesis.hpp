// The nemesis of `lockstep fuzz --mode cluster`: what is done to the nodes
// the fuzzer started (and, when asked, to the etcd members they rely on),
// and when, drawn from the run's seed before the run. Every fault heals
// within the period it opens, so at most one thing is wrong at a time and a
// majority of three stays up:
//
//   kill     SIGKILL a process, start it again (same port, same data) half a
//            period later;
//   pause    SIGSTOP a process, SIGCONT it half a period later;
//   restart  stop a process (SIGTERM) and start it again at once;
//
// and, through the relays the fuzzer puts between the processes
// (live/fault_proxy.hpp), faults of the links, each healed half a period
// later:
//
//   partition-node     a node cut from every etcd member both ways (a black
//                      hole: its connections stay open and carry nothing)
//                      while its clients stay connected;
//   partition-clients  a node's clients cut from it, both ways;
//   slow-etcd          every node's etcd links slowed by `slow_ms` each way;
//   etcd-minority      one etcd member cut from its peers: its peer port's
//                      relay cut both ways, so that nothing it sends its
//                      peers arrives and none of them reaches it (etcd's
//                      streams it dialed itself still bring it their
//                      messages): it can neither vote nor forward, a
//                      minority of one of three.
//
// and, on nodes started with wrong clocks (live/node_clocks.hpp):
//
//   clock-jump         a node's wall clock stepped forward or back by up to
//                      `clock_jump_max_ms`, stepped back half a period later.
//
// Half the faults on nodes hit the node that leads when they are done.
//
// The plan is a plain list: no clock, no randomness but the seed's, so the
// same seed gives the same plan (the driver in live/cluster_fuzz.cpp
// carries it out and records each step in the history).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::live {

enum class NemesisFault { kill, pause, restart, partition_node, partition_clients, slow_etcd, etcd_minority, clock_jump };

// Every fault the nemesis knows, by name, in the order `all` lists them: a
// new kind of fault is added here (with its steps in nemesis_plan and the
// driver's apply), and `--nemesis all`, which the soak runs, includes it.
const std::vector<NemesisFault>& nemesis_faults_known();

// "kill,pause,restart,partition-node,partition-clients,slow-etcd,etcd-minority,clock-jump" (any
// non-empty subset, each once), or "all" (every
// fault known); nothing and `error` set otherwise.
std::optional<std::vector<NemesisFault>> parse_nemesis_faults(std::string_view text, std::string& error);
const char* nemesis_fault_name(NemesisFault fault);
// Whether the fault acts on links, through relays, rather than on processes.
bool is_link_fault(NemesisFault fault);
// Whether it acts on a node's clock (through libfaketime's file).
bool is_clock_fault(NemesisFault fault);

struct NemesisStep {
  enum class Kind {
    kill, start, pause, resume, restart, cut_etcd, heal_etcd, cut_clients, heal_clients, slow_etcd, heal_slow,
    cut_peers, heal_peers, jump_clock, unjump_clock
  };
  std::int64_t at_us = 0;  // since the run's start
  Kind kind = Kind::kill;
  bool etcd = false;       // an etcd member, else a node
  int index = 0;           // which node or member, from 0
  // A fault on the node that leads when it is done (the driver asks; if none
  // answers as leader, `index`); its heal, `heals` >= 0, acts on the same.
  bool leader = false;
  int heals = -1;          // a heal: the index in the plan of the fault it heals
  std::int64_t jump_ms = 0;  // jump_clock: the step, forward (> 0) or back
  // As the history's `nemesis` event says it: "kill n2", "resume etcd1",
  // "cut n2 from etcd", "heal n2 from its clients", "slow etcd links",
  // "jump n2's clock by +40 ms", "jump n2's clock back".
  std::string what() const;
  // The fault it opens or heals, as --nemesis names it.
  NemesisFault fault() const;
};

struct NemesisPlanOptions {
  std::vector<NemesisFault> faults;
  double every_s = 5;
  int nodes = 3;
  int etcd_members = 0;  // acted on too when > 0
  int store_members = 0;  // etcd members there are, for etcd-minority
  double duration_s = 10;
  std::uint64_t seed = 1;
  std::int64_t clock_jump_max_ms = 0;  // clock-jump's largest step
};

// The steps in time order: a fault at every period's start from the first
// period's end on, each healed (kill, pause) half a period later; none
// after the run's end, every fault healed by then. Half the faults on
// nodes are aimed at the leader of the moment (where a lock service's
// faults matter most: requests in flight, Expires owed, a new leader's
// deadlines), the others at a node drawn from the seed.
std::vector<NemesisStep> nemesis_plan(const NemesisPlanOptions& options);

}  // namespace lockstep::live
