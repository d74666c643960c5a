// The lock workload of the cluster-mode simulator (simulation.hpp) on the
// Raft harness: what travels between clients and nodes, the workload's
// events, the watch that hands each node's applies to the checkers, and
// LockWorkload, which drives it all. Declared here so that its parts are
// files of their own: workload.cpp what the harness calls (the nodes'
// ticks, applies, crashes and restarts, the liveness phase, the figures,
// the trace's watch), nodes.cpp a node's side (its leadership, its
// outputs, the lines it reads), clients.cpp the clients' side (requests,
// retries with backoff, answers, their connections). simulation.cpp sets
// the run up and runs it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "impl/cluster/node.hpp"
#include "sim/cluster/checker.hpp"
#include "sim/cluster/lateness.hpp"
#include "sim/cluster/replica.hpp"
#include "sim/cluster/simulation.hpp"
#include "sim/cluster/timeline.hpp"
#include "sim/cluster/trace.hpp"
#include "sim/core/network.hpp"
#include "sim/raft/harness.hpp"

namespace lockstep::sim {

using raft::NodeId;

// What travels between clients and nodes (not through the Raft network),
// on one connection: a client's request, or a node's response or close.
struct ClientMessage {
  struct Request {
    std::string line;
  };
  struct Reply {
    Response response;
  };
  struct Closed {};  // the node closed the connection
  ClientConnection connection;
  std::variant<Request, Reply, Closed> what;
};

// The workload's events, one struct per kind.
namespace work_event {
struct Act {
  std::uint32_t client = 0;  // its next request is due
};
// A client's timer: its attempt's timeout, or (`resend`) the end of its
// backoff before the next attempt. A timer the client has since replaced
// is stale.
struct Timer {
  std::uint32_t client = 0;
  std::uint64_t timer = 0;
  bool resend = false;
};
struct ToNode {
  std::uint32_t slot = 0;  // the message's slot in the pool
};
struct ToClient {
  std::uint32_t slot = 0;
};
}  // namespace work_event

// The client address a node advertises, as `E not-leader` names it.
inline std::string node_address(NodeId id) { return fmt::format("node{}:7878", id); }
inline std::optional<NodeId> address_node(std::string_view address) {
  if (!address.starts_with("node")) return std::nullopt;
  const auto colon = address.find(':');
  NodeId id = 0;
  for (const char c : address.substr(4, colon - 4)) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + static_cast<NodeId>(c - '0');
  }
  return id;
}

class LockWorkload;

// Hands the checkers, and the trace if there is one, every command a node
// applies (cluster::ApplyObserver).
struct NodeWatch final : cluster::ApplyObserver {
  NodeId id = 0;
  ClusterChecker* checker = nullptr;
  ClusterLateness* lateness = nullptr;
  ClusterTimelineRecorder* timeline = nullptr;
  ClusterTraceWriter* trace = nullptr;
  TimeMs now;        // global time of the apply
  raft::Term term = 0;  // of the entry being applied
  TimeMs proposed;   // global time its leader proposed it

  void before_command(cluster::LogIndex index, const cluster::Command& command,
                      const cluster::LockMachine& machine) override {
    LOCKSTEP_ASSERT(checker != nullptr && lateness != nullptr);  // set by LockWorkload::start, before any apply
    // The checker moves its index on once an entry is done: until then
    // this index is the next one, on the first node to apply it.
    if (index == checker->model_index() + 1) lateness->before_first_apply(command, machine);
    checker->before_command(id, index, command, machine);
  }
  void after_command(cluster::LogIndex index, const cluster::Command& command, const cluster::LockMachine& machine,
                     const cluster::Applied& applied) override {
    LOCKSTEP_ASSERT(checker != nullptr && lateness != nullptr);
    if (index == checker->model_index() + 1) lateness->after_first_apply(command, machine, applied, proposed);
    checker->after_command(id, index, command, machine, applied, now);
    if (timeline != nullptr) timeline->after_command(id, index, command, machine, applied, now);
    if (trace != nullptr) trace->apply(id, index, term, command, machine, applied, now);
  }
};

class LockWorkload {
 public:
  using Machine = NodeReplica;
  using Harness = RaftHarness<LockWorkload>;
  using Event = std::variant<work_event::Act, work_event::Timer, work_event::ToNode, work_event::ToClient>;
  // The run's hash takes a client's events by their client.
  static std::uint64_t event_subject(const Event& e) {
    if (const auto* act = std::get_if<work_event::Act>(&e)) return act->client;
    if (const auto* timer = std::get_if<work_event::Timer>(&e)) return timer->client;
    return 0;
  }

  LockWorkload(const ClusterSimParams& params, ClusterTimelineRecorder* timeline, ClusterTraceWriter* trace,
               ClusterClientObserver* clients)
      : p_(params),
        timeline_(timeline),
        trace_(trace),
        observer_(clients),
        pool_(1 << 20),
        watches_(params.raft.nodes + 1),
        known_leader_(params.raft.nodes + 1, 0),
        ticks_(params.raft.nodes + 1, 0),
        clients_(params.clients + 1),
        lateness_(DurationMs{2 * params.skew_bound_ms.value}, params.client_latency_max_ms) {}

  Machine make_machine() const;
  void start(Harness& h);

  void on_event(Harness& h, const Event& e) {
    std::visit([this, &h](const auto& typed) { handle(h, typed); }, e);
  }

  void on_apply(Harness& h, NodeId id, const raft::Entry& entry, Machine& machine);
  void on_tick(Harness& h, NodeId id);
  void after_event(Harness& h);
  void on_down(Harness& h, NodeId id);
  void on_restart(Harness& h, NodeId id);

  void start_liveness(Harness&) {}
  DurationMs liveness_ms() const { return cluster_liveness_ms(p_); }

  void check_liveness(Harness& h);
  ClusterLockStats lock_stats(Harness& h);
  const ClusterLateness& lateness(TimeMs end);

 private:
  struct Held {
    std::string key;
    Token token;
    bool releases = true;  // else it lets the lease run out
  };
  struct Client {
    std::uint32_t id = 0;
    std::string name;  // its session's client id
    std::uint64_t sequence = 0;
    bool waiting = false;
    cluster::Session session;
    cluster::Command command;  // the outstanding request, unstamped
    std::string line;          // and its wire line
    ConnectionId connection;   // the current attempt's
    NodeId target = 1;
    std::uint32_t attempts = 0;
    std::uint64_t timer = 0;
    std::uint64_t connections = 0;
    std::optional<Held> held;
    std::vector<Token> past_tokens;  // for stale releases; the last few
    bool reusing = false;  // the outstanding request reuses the last one's number
    // The last request was answered, so the cluster applied it and keeps its
    // outcome: reusing its number is refused (not so one given up, which
    // may never have been applied).
    bool last_answered = false;
  };

  void add_node_stats(const cluster::NodeStats& s) { add_node_stats(s, lock_); }
  static void add_node_stats(const cluster::NodeStats& s, ClusterLockStats& into);
  void sync_leadership(Harness& h, NodeId id);
  void dispatch(Harness& h, NodeId id, cluster::NodeOutputs out);
  bool propose(Harness& h, NodeId id, std::string bytes, cluster::Epoch epoch);

  void schedule_act(Harness& h, std::uint32_t client, DurationMs after) {
    h.push(h.now() + after, work_event::Act{client});
  }

  void act(Harness& h, std::uint32_t c);
  void reuse(Harness& h, std::uint32_t c);
  DurationMs lease_of(const cluster::Command& command) const;
  DurationMs wait_of(const cluster::Command& command) const;
  void send(Harness& h, std::uint32_t c);

  DurationMs latency(Harness& h) {
    return DurationMs{h.workload_prng().between(p_.client_latency_min_ms.value, p_.client_latency_max_ms.value)};
  }

  void retry(Harness& h, std::uint32_t c, NodeId hint);

  void handle(Harness& h, const work_event::Act& e) { act(h, e.client); }
  void handle(Harness& h, const work_event::Timer& e) { on_timer(h, e); }
  void handle(Harness& h, const work_event::ToNode& e) { at_node(h, pool_.take(e.slot)); }
  void handle(Harness& h, const work_event::ToClient& e) { at_client(h, pool_.take(e.slot)); }

  void at_node(Harness& h, ClientMessage m);
  void trace_heap_check(Harness& h, NodeId id, const cluster::NodeOutputs& out);
  void to_client(Harness& h, ClientMessage m);
  void at_client(Harness& h, ClientMessage m);
  void give_up(Harness& h, std::uint32_t c);
  void count(const Response& r);
  void on_timer(Harness& h, const work_event::Timer& e);
  ClientConnection open_connection(std::uint32_t c);
  const ClientConnection& connection(ConnectionId id) const;
  void watch_for_trace(Harness& h);

  ClusterSimParams p_;
  ClusterTimelineRecorder* timeline_;  // or nullptr
  ClusterTraceWriter* trace_;          // or nullptr
  ClusterClientObserver* observer_;    // or nullptr
  std::optional<ClusterChecker> checker_;  // made in start(): it reports to the harness's Raft checker
  InFlightPool<ClientMessage> pool_;
  std::vector<NodeWatch> watches_;
  std::vector<NodeId> known_leader_;  // the leader each node was last told of
  static constexpr std::uint64_t table_check_ticks = 50;
  std::vector<std::uint64_t> ticks_;
  std::vector<Client> clients_;
  std::uint64_t timers_ = 0;
  // Every connection a client opened in the run, by id: a node may answer
  // on one long after its client gave it up. One per attempt, so bounded by
  // the run's requests and retries.
  std::map<std::uint64_t, ClientConnection> connections_;
  ClusterLockStats lock_;
  ClusterLateness lateness_;
  // When each log entry was proposed (global time): the instant of its
  // command in the explanation the lateness meter measures.
  std::map<std::pair<raft::Term, raft::Index>, TimeMs> proposed_at_;
};

}  // namespace lockstep::sim
