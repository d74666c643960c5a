// The lock workload on the Raft harness. Each simulated node is one
// cluster::Node (impl/cluster/node.hpp), which does everything a node does:
// this file only drives it over our Raft, with the term as its epoch:
// client lines in, committed entries in (through NodeReplica), leadership
// and the leader's address in, ticks on the node's own clock; proposals out
// to Raft while their epoch is the node's current term (any other is
// reported failed to the node, as a fenced write would be), responses and
// closes out to the clients, snapshots out to Raft's compaction. The rest
// is clients, faults and checking: clients send one request at a time
// (with their session: `A ... <client> <seq>`), follow `E not-leader`
// redirects, and retry with backoff on a new connection after a timeout or
// when the node closes the connection (it could not tell whether the
// request would commit), so a retry is applied at most once. Nodes are not
// told that a connection was given up, so no Close is proposed: a waiter
// stays queued until answered or moved by its retry. Close is covered by
// the node's unit tests and the cluster vectors, not here: the checker
// would first need to expect the T that a dropped waiter's retry gets.
#include "sim/cluster/simulation.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "impl/assert.hpp"
#include "impl/cluster/node.hpp"
#include "sim/cluster/checker.hpp"
#include "sim/cluster/lateness.hpp"
#include "sim/cluster/replica.hpp"
#include "sim/cluster/timeline.hpp"
#include "sim/cluster/trace.hpp"
#include "sim/core/network.hpp"
#include "sim/raft/harness.hpp"

namespace lockstep::sim {

ClusterSimParams cluster_default_params(std::uint64_t seed, std::uint32_t nodes) {
  ClusterSimParams p;
  p.raft = raft_default_params(seed, nodes);
  p.raft.duration_ms = DurationMs{10'000};
  p.limits.max_keys = 64;
  p.limits.max_waiters_per_key = 8;
  p.limits.max_waiters = 128;
  p.limits.max_lease_ms = DurationMs{60'000};
  p.limits.max_wait_ms = DurationMs{60'000};
  return p;
}

ClusterSimParams cluster_swarm_params(std::uint64_t seed, std::uint32_t nodes) {
  ClusterSimParams p = cluster_default_params(seed, nodes);
  p.raft = raft_swarm_params(seed, nodes);
  p.raft.duration_ms = DurationMs{10'000};
  Prng prng(seed ^ 0x434c555354455253ULL);  // "CLUSTERS": apart from the run's own streams
  p.keys = static_cast<std::uint32_t>(prng.between(1, 40));
  p.lease_min_ms = DurationMs{prng.between(10, 200)};
  p.lease_max_ms = DurationMs{p.lease_min_ms.value + prng.between(50, 3'000)};
  p.wait_max_ms = DurationMs{prng.between(0, 2'500)};
  p.try_lock = prng.unit() * 0.3;
  p.let_expire = prng.unit() * 0.6;
  p.think_max_ms = DurationMs{prng.between(1, 500)};
  p.hold_max_ms = DurationMs{prng.between(1, 2'000)};
  p.client_latency_max_ms = DurationMs{p.client_latency_min_ms.value + prng.between(0, 30)};
  p.response_loss = prng.chance(0.3) ? 0 : prng.unit() * 0.05;
  p.rpc_timeout_ms = DurationMs{prng.between(150, 800)};
  p.limits.max_keys = static_cast<std::uint64_t>(prng.between(1, 64));
  p.limits.max_waiters_per_key = static_cast<std::uint64_t>(prng.between(1, 12));
  p.limits.max_waiters = static_cast<std::uint64_t>(prng.between(1, 128));
  p.skew_bound_ms = DurationMs{prng.between(5, 200)};
  // Drawn last, so that the draws above are those of earlier versions.
  p.reuse_sequence = prng.chance(0.5) ? 0 : prng.unit() * 0.05;
  p.give_up = prng.chance(0.5) ? 0 : prng.unit() * 0.15;
  p.waiter_grace_ms = DurationMs{prng.between(0, 3'000)};
  return p;
}

std::string describe(const ClusterSimParams& p) {
  return fmt::format(
      "{} | clients={} keys={} lease={}..{}ms wait<={}ms try={:.2f} expire={:.2f} think<={}ms hold<={}ms "
      "client-latency={}..{}ms response-loss={:.3f} rpc-timeout={}ms reuse={:.3f} give-up={:.2f} grace={}ms "
      "skew-bound={}ms{} limits={}/{}/{} bug={}",
      describe(p.raft), p.clients, p.keys, p.lease_min_ms.value, p.lease_max_ms.value, p.wait_max_ms.value, p.try_lock,
      p.let_expire, p.think_max_ms.value, p.hold_max_ms.value, p.client_latency_min_ms.value,
      p.client_latency_max_ms.value, p.response_loss, p.rpc_timeout_ms.value, p.reuse_sequence, p.give_up,
      p.waiter_grace_ms.value, p.skew_bound_ms.value,
      p.skew_beyond_bound ? " (beyond)" : "", p.limits.max_keys, p.limits.max_waiters_per_key, p.limits.max_waiters,
      cluster::cluster_bug_name(p.bug));
}

DurationMs cluster_liveness_ms(const ClusterSimParams& p) {
  // Every client's last request answered: a wait, retries with backoff
  // after a leader appears, and every lease that was running ended.
  const auto needed = p.raft.leader_bound_ms.value + p.wait_max_ms.value + p.lease_max_ms.value +
                      p.waiter_grace_ms.value + p.expire_bound_ms.value +
                      4 * (8 * p.rpc_timeout_ms.value + p.backoff_max_ms.value);
  return DurationMs{std::max(raft_liveness_ms(p.raft).value, needed)};
}

namespace {

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
std::string node_address(NodeId id) { return fmt::format("node{}:7878", id); }
std::optional<NodeId> address_node(std::string_view address) {
  if (!address.starts_with("node")) return std::nullopt;
  const auto colon = address.find(':');
  NodeId id = 0;
  for (const char c : address.substr(4, colon - 4)) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + static_cast<NodeId>(c - '0');
  }
  return id;
}

// The wire line of a client's request, with its session fields.
std::string request_line(const cluster::Command& command) {
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) {
    return fmt::format("A {} {} {} {} {} {}", a->key, a->owner, a->lease_ms.value, a->wait_ms.value, a->session.client,
                       a->session.sequence);
  }
  const auto& r = std::get<cluster::Release>(command);
  return fmt::format("R {} {} {} {}", r.key, r.token.value, r.session.client, r.session.sequence);
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

  Machine make_machine() const {
    cluster::NodeConfig config;
    config.limits = p_.limits;
    config.sessions = p_.sessions;
    config.bug = p_.bug;
    config.waiter_grace_ms = p_.waiter_grace_ms;
    config.snapshot_every_entries = p_.raft.compact_threshold;
    config.log_keep_entries = p_.raft.log_keep;
    return Machine(config);
  }

  void start(Harness& h) {
    checker_.emplace(h.checker(), p_.limits, p_.sessions, p_.skew_bound_ms);
    for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
      watches_[id].id = id;
      watches_[id].checker = &*checker_;
      watches_[id].lateness = &lateness_;
      watches_[id].timeline = timeline_;
      watches_[id].trace = trace_;
    }
    // A restarted node is a new Node: it is (re)connected to its watch
    // before each entry it applies.
    h.cluster().on_before_apply = [this, &h](NodeId id, const raft::Entry& entry, const Machine&) {
      watches_[id].now = h.now();
      watches_[id].term = entry.term;
      const auto proposal = proposed_at_.find({entry.term, entry.index});
      watches_[id].proposed = proposal != proposed_at_.end() ? proposal->second : h.now();
      h.cluster().machine(id).node.set_observer(&watches_[id]);
    };
    if (trace_ != nullptr) watch_for_trace(h);
    for (std::uint32_t c = 1; c <= p_.clients; ++c) {
      clients_[c].id = c;
      clients_[c].name = fmt::format("{}", c);
      clients_[c].target = static_cast<NodeId>(1 + c % p_.raft.nodes);
      schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
    }
  }

  void on_event(Harness& h, const Event& e) {
    std::visit([this, &h](const auto& typed) { handle(h, typed); }, e);
  }

  void on_apply(Harness& h, NodeId id, const raft::Entry& entry, Machine& machine) {
    checker_->entry_applied(id, entry.index);
    dispatch(h, id, std::exchange(machine.outputs, {}));
  }

  void on_tick(Harness& h, NodeId id) {
    sync_leadership(h, id);
    auto& cluster = h.cluster();
    if (!cluster.alive(id)) return;
    const auto& node = cluster.machine(id).node;
    if (node.leading()) {
      // The checker outside the heap: every deadline of the leader's
      // applied table is in its heap or in flight.
      for (const auto& deadline : node.machine().deadlines()) {
        if (node.heap().tracks(deadline)) continue;
        h.checker().fail("deadline-heap",
                         fmt::format("leader {} (term {}) does not track the {} of `{}` (id {}) at {} ms of its applied "
                                     "state",
                                     id, cluster.node(id).term(),
                                     deadline.target.kind == cluster::DeadlineTarget::Kind::expire ? "expiry" : "wait deadline",
                                     deadline.target.key, deadline.target.id, deadline.at.value));
        break;  // the node goes on as it would: a traced run goes on past its first violation
      }
    }
    cluster::NodeOutputs out;
    cluster.machine(id).node.on_tick(h.local(id), out);
    // A leader asks its heap at every tick.
    if (trace_ != nullptr && node.leading()) trace_heap_check(h, id, out);
    dispatch(h, id, std::move(out));
    // The node's own invariants, on every node now and then: a full check
    // costs as much as hundreds of applies.
    if (cluster.alive(id) && ++ticks_[id] % table_check_ticks == 0) cluster.machine(id).node.check_invariants();
  }

  void after_event(Harness& h) {
    auto& cluster = h.cluster();
    for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
      if (!cluster.alive(id)) {
        if (timeline_ != nullptr) timeline_->node_state(id, false, 0, h.now());
        continue;
      }
      sync_leadership(h, id);
      if (timeline_ != nullptr) {
        const auto& node = cluster.node(id);
        timeline_->node_state(id, true, node.role() == raft::Role::leader ? node.term() : 0, h.now());
      }
    }
  }

  void on_down(Harness& h, NodeId id) {
    // Its connections died with it; its Node is replaced at the restart.
    add_node_stats(h.cluster().machine(id).node.stats());
    if (trace_ != nullptr) trace_->down(id);
  }

  void on_restart(Harness& h, NodeId id) {
    known_leader_[id] = 0;
    if (trace_ != nullptr) trace_->restart(id, h.cluster().machine(id).node.machine(), h.now());
  }

  void start_liveness(Harness&) {}
  DurationMs liveness_ms() const { return cluster_liveness_ms(p_); }

  void check_liveness(Harness& h) {
    auto& cluster = h.cluster();
    for (std::uint32_t c = 1; c <= p_.clients; ++c) {
      if (clients_[c].waiting) {
        h.checker().fail("liveness", fmt::format("client {}'s request {} (`{}`) is unanswered at the end", c,
                                                 clients_[c].session.sequence, cluster::describe(clients_[c].command)));
        return;
      }
    }
    NodeId leader = 0;
    for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
      if (cluster.alive(id) && cluster.node(id).role() == raft::Role::leader) leader = id;
    }
    if (leader == 0) {
      h.checker().fail("liveness", "no leader at the end");
      return;
    }
    const auto& machine = cluster.machine(leader).node.machine();
    const auto limit = TimeMs{h.local(leader).value - p_.expire_bound_ms.value};
    for (const auto& [key, state] : machine.keys()) {
      if (state.expiry < limit) {
        h.checker().fail("liveness", fmt::format("key `{}` (token {}) is still held at the end, {} ms past its expiry "
                                                 "on the leader's clock; the bound is {} ms",
                                                 key, state.token.value, (h.local(leader) - state.expiry).value,
                                                 p_.expire_bound_ms.value));
        return;
      }
      for (const auto& [id, waiter] : state.queue) {
        // A waiter a leader change detached is due at the end of its grace.
        if (machine.due_at(waiter) < limit) {
          h.checker().fail("liveness", fmt::format("`{}` still waits for key `{}` at the end, past its deadline{}",
                                                   waiter.owner, key,
                                                   waiter.detached_at ? " or the end of its grace after a leader change"
                                                                      : ""));
          return;
        }
      }
    }
    // Every node that applied the whole log holds the model's table.
    for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
      if (cluster.alive(id)) checker_->compare_final(id, cluster.machine(id).node.machine());
    }
  }

  ClusterLockStats lock_stats(Harness& h) {
    ClusterLockStats stats = lock_;
    for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
      if (h.cluster().alive(id)) add_node_stats(h.cluster().machine(id).node.stats(), stats);
    }
    stats.expires_applied = checker_->expires_applied();
    stats.timeouts_applied = checker_->timeouts_applied();
    return stats;
  }

  const ClusterLateness& lateness(TimeMs end) {
    lateness_.finish(end);
    return lateness_;
  }

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
  static void add_node_stats(const cluster::NodeStats& s, ClusterLockStats& into) {
    into.expires_proposed += s.expires_proposed;
    into.timeouts_proposed += s.timeouts_proposed;
    into.snapshots += s.snapshots;
    into.closed_unknown += s.connections_closed_unknown;
    into.closed_waiting += s.connections_closed_waiting;
  }

  // Tells the node what Raft says of its leadership: gained with the term
  // as the epoch, lost, and who leads (for its redirects).
  void sync_leadership(Harness& h, NodeId id) {
    auto& cluster = h.cluster();
    if (!cluster.alive(id)) return;
    const auto& raft = cluster.node(id);
    auto& node = cluster.machine(id).node;
    const bool leads = raft.role() == raft::Role::leader;
    const NodeId leader = leads ? id : raft.leader();
    // Called after every event for every node: most calls change nothing.
    if (leader == known_leader_[id] && leads == node.leading() &&
        (!leads || node.epoch() == cluster::Epoch{raft.term()})) {
      return;
    }
    if (leader != known_leader_[id]) {
      known_leader_[id] = leader;
      node.on_leader_address(leader != raft::node_none ? node_address(leader) : std::string());
    }
    cluster::NodeOutputs out;
    if (leads && (!node.leading() || node.epoch() != cluster::Epoch{raft.term()})) {
      node.on_leadership_gained(cluster::Epoch{raft.term()}, h.local(id), out);
    } else if (!leads && node.leading()) {
      node.on_leadership_lost(out);
    }
    dispatch(h, id, std::move(out));
  }

  // What a node output, in the order the node asks: proposals to Raft, then
  // lines and closes to clients, then compaction.
  void dispatch(Harness& h, NodeId id, cluster::NodeOutputs out) {
    if (out.proposals.empty() && out.to_clients.empty() && !out.compaction) return;
    auto& cluster = h.cluster();
    if (!cluster.alive(id)) return;
    cluster::NodeOutputs failed;
    for (auto& proposal : out.proposals) {
      if (propose(h, id, std::move(proposal.bytes), proposal.epoch)) continue;
      if (!cluster.alive(id)) return;  // crashed while writing: its outputs die with it
      cluster.machine(id).node.on_proposal_failed(proposal.id, failed);
    }
    if (!cluster.alive(id)) return;
    for (auto& message : out.to_clients) {
      if (message.kind == cluster::ToClient::Kind::clock_marker) continue;  // no test clock here
      if (trace_ != nullptr && message.kind == cluster::ToClient::Kind::response) {
        trace_->reply(connection(message.connection), message.response, h.now());  // sent, even if then lost
      }
      ClientMessage m{connection(message.connection), ClientMessage::Closed{}};
      LOCKSTEP_ASSERT(m.connection.node == id);
      if (message.kind != cluster::ToClient::Kind::close) {
        if (h.workload_prng().chance(p_.response_loss) && !h.in_liveness()) continue;  // the connection broke
        m.what = ClientMessage::Reply{std::move(message.response)};
      }
      to_client(h, std::move(m));
    }
    if (out.compaction) h.route(cluster.compact_with(id, out.compaction->index, std::move(out.compaction->bytes)));
    dispatch(h, id, std::move(failed));
  }

  // Raft takes a proposal only from the leader of the term it was made in:
  // a deposed leader's proposal is refused here, as etcd refuses a write
  // fenced on an old election revision.
  bool propose(Harness& h, NodeId id, std::string bytes, cluster::Epoch epoch) {
    auto& cluster = h.cluster();
    if (!cluster.alive(id)) return false;
    const auto& raft = cluster.node(id);
    if (raft.role() != raft::Role::leader || raft.term() != epoch.value) return false;
    auto out = cluster.propose(id, std::move(bytes), h.local(id));
    h.route(std::move(out.messages));
    if (out.kind == raft::ProposeResult::Kind::accepted) {
      proposed_at_[{out.term, out.index}] = h.now();
      ++h.stats().proposed;
      return true;
    }
    if (out.kind == raft::ProposeResult::Kind::too_many_uncommitted) ++h.stats().refused;
    return false;
  }

  void schedule_act(Harness& h, std::uint32_t client, DurationMs after) {
    h.push(h.now() + after, work_event::Act{client});
  }

  // The client's next request, or nothing once the workload stopped.
  void act(Harness& h, std::uint32_t c) {
    auto& client = clients_[c];
    if (client.waiting || h.in_liveness()) return;
    auto& prng = h.workload_prng();
    if (p_.reuse_sequence > 0 && client.last_answered && prng.chance(p_.reuse_sequence)) {
      reuse(h, c);
      return;
    }
    client.session = cluster::Session{client.name, ++client.sequence};
    if (client.held && client.held->releases) {
      Token token = client.held->token;
      if (prng.chance(p_.stale_release) && !client.past_tokens.empty()) {
        token = client.past_tokens[prng.below(client.past_tokens.size())];
      } else if (prng.chance(p_.random_release)) {
        token = Token{static_cast<std::uint64_t>(prng.between(1, 1'000'000))};
      }
      client.command = cluster::Release{client.session, ConnectionId{}, client.held->key, token, TimeMs{0}};
    } else {
      client.held.reset();  // a lease let run out is forgotten
      const auto key = fmt::format("k{}", prng.below(p_.keys));
      const auto lease = DurationMs{prng.between(p_.lease_min_ms.value, p_.lease_max_ms.value)};
      const auto wait = prng.chance(p_.try_lock) ? DurationMs{0} : DurationMs{prng.between(0, p_.wait_max_ms.value)};
      client.command =
          cluster::Acquire{client.session, ConnectionId{}, key, session_owner(client.session), lease, wait, TimeMs{0}};
    }
    client.line = request_line(client.command);
    ++lock_.requests;
    client.waiting = true;
    client.attempts = 0;
    send(h, c);
  }

  // A request under the number of the client's last one, asking something
  // else (a try-lock that differs from it): the cluster must refuse it.
  void reuse(Harness& h, std::uint32_t c) {
    auto& client = clients_[c];
    auto& prng = h.workload_prng();
    const auto key = fmt::format("k{}", prng.below(p_.keys));
    auto lease = DurationMs{prng.between(p_.lease_min_ms.value, p_.lease_max_ms.value)};
    if (const auto* last = std::get_if<cluster::Acquire>(&client.command);
        last != nullptr && last->key == key && last->lease_ms == lease && last->wait_ms.value == 0) {
      lease = DurationMs{lease.value == 1 ? 2 : lease.value - 1};
    }
    client.command = cluster::Acquire{client.session, ConnectionId{}, key, session_owner(client.session), lease,
                                      DurationMs{0}, TimeMs{0}};
    client.line = request_line(client.command);
    client.reusing = true;
    ++lock_.requests;
    ++lock_.reused;
    client.waiting = true;
    client.attempts = 0;
    send(h, c);
  }

  DurationMs lease_of(const cluster::Command& command) const {
    if (const auto* a = std::get_if<cluster::Acquire>(&command)) return a->lease_ms;
    return DurationMs{0};
  }
  DurationMs wait_of(const cluster::Command& command) const {
    if (const auto* a = std::get_if<cluster::Acquire>(&command)) return a->wait_ms;
    return DurationMs{0};
  }

  // One attempt, on a new connection to the client's target node.
  void send(Harness& h, std::uint32_t c) {
    auto& client = clients_[c];
    ++client.attempts;
    ++lock_.attempts;
    const ClientConnection opened = open_connection(c);
    client.connection = opened.id;
    // (A request reusing a number is another operation, which grants
    // nothing and causes nothing: the meters follow the first one.)
    if (!client.reusing) {
      checker_->on_send(client.session, lease_of(client.command), h.now());
      lateness_.sent(client.session, h.now());
    }
    if (observer_ != nullptr) observer_->sent(h.now(), client.connection, client.line);
    const auto delay = latency(h);
    const auto slot = pool_.put(ClientMessage{opened, ClientMessage::Request{client.line}});
    h.push(h.now() + delay, work_event::ToNode{slot});
    client.timer = ++timers_;
    // The timeout doubles with each attempt (up to 8 times): a cluster slower
    // than its clients' retries would otherwise drown in their copies.
    const auto timeout = DurationMs{p_.rpc_timeout_ms.value << std::min<std::uint32_t>(client.attempts - 1, 3)};
    h.push(h.now() + wait_of(client.command) + timeout, work_event::Timer{c, client.timer, false});
  }

  DurationMs latency(Harness& h) {
    return DurationMs{h.workload_prng().between(p_.client_latency_min_ms.value, p_.client_latency_max_ms.value)};
  }

  // Gives up the attempt: a new connection after a backoff, to the hinted
  // leader or the next node.
  void retry(Harness& h, std::uint32_t c, NodeId hint) {
    auto& client = clients_[c];
    ++lock_.retries;
    if (hint != 0 && hint != client.target) {
      client.target = hint;
    } else {
      client.target = static_cast<NodeId>(client.target % p_.raft.nodes + 1);
    }
    const auto exponent = std::min<std::uint32_t>(client.attempts, 10);
    const auto ceiling = std::min(p_.backoff_max_ms.value, p_.backoff_min_ms.value << exponent);
    const auto backoff = DurationMs{h.workload_prng().between(p_.backoff_min_ms.value, std::max(p_.backoff_min_ms.value, ceiling))};
    client.timer = ++timers_;
    if (client.connection.value != 0) {
      if (!client.reusing) lateness_.attempt_ended(client.session, h.now());
      if (observer_ != nullptr) observer_->given_up(h.now(), client.connection);
    }
    client.connection = ConnectionId{};  // nothing more is heard on the old one
    h.push(h.now() + backoff, work_event::Timer{c, client.timer, true});
  }

  void handle(Harness& h, const work_event::Act& e) { act(h, e.client); }
  void handle(Harness& h, const work_event::Timer& e) { on_timer(h, e); }
  void handle(Harness& h, const work_event::ToNode& e) { at_node(h, pool_.take(e.slot)); }
  void handle(Harness& h, const work_event::ToClient& e) { at_client(h, pool_.take(e.slot)); }

  void at_node(Harness& h, ClientMessage m) {
    const auto* request = std::get_if<ClientMessage::Request>(&m.what);
    LOCKSTEP_ASSERT(request != nullptr);  // clients send nothing else
    auto& cluster = h.cluster();
    const NodeId id = m.connection.node;
    if (!cluster.alive(id)) return;  // the connection never opens
    sync_leadership(h, id);
    if (!cluster.alive(id)) return;
    cluster::NodeOutputs out;
    auto& node = cluster.machine(id).node;
    const auto proposed_before = node.stats().requests_proposed;
    node.on_line(m.connection.id, request->line, h.local(id), out);
    // A leader asks its heap before it proposes a request (and only then:
    // a redirect or a refusal proposes nothing).
    if (trace_ != nullptr && node.stats().requests_proposed > proposed_before) trace_heap_check(h, id, out);
    dispatch(h, id, std::move(out));
  }

  // What the leader's heap yielded at its clock is among the proposals the
  // node is about to hand to Raft, which the trace sees go in.
  void trace_heap_check(Harness& h, NodeId id, const cluster::NodeOutputs& out) {
    const auto& node = h.cluster().machine(id).node;
    trace_->heap_due(id, h.local(id), node.machine(), out.proposals, h.now());
  }

  void to_client(Harness& h, ClientMessage m) {
    const auto delay = latency(h);
    const auto slot = pool_.put(std::move(m));
    h.push(h.now() + delay, work_event::ToClient{slot});
  }

  void at_client(Harness& h, ClientMessage m) {
    const std::uint32_t c = m.connection.client;
    auto& client = clients_[c];
    if (!client.waiting || m.connection.id != client.connection) return;  // a connection given up
    const auto* reply = std::get_if<ClientMessage::Reply>(&m.what);
    if (reply == nullptr) {
      LOCKSTEP_ASSERT(std::holds_alternative<ClientMessage::Closed>(m.what));  // nodes send no requests
      // The node could not tell whether the request would commit, or it
      // stopped leading while the request waited: ask again, or give up.
      if (observer_ != nullptr) observer_->closed_by_node(h.now(), m.connection.id);
      if (!client.reusing) lateness_.attempt_ended(client.session, h.now());
      client.connection = ConnectionId{};
      // (Only an acquire that may wait: the client a leader change must not
      // leave a ghost of.)
      if (p_.give_up > 0 && wait_of(client.command).value > 0 && !client.reusing &&
          h.workload_prng().chance(p_.give_up) && !h.in_liveness()) {
        give_up(h, c);
        return;
      }
      retry(h, c, 0);
      return;
    }
    const Response& response = reply->response;
    if (observer_ != nullptr) observer_->received(h.now(), m.connection.id, format_response(response));
    lateness_.received(response, h.now());
    if (response.kind == ResponseKind::error && response.reason.starts_with("not-leader")) {
      ++lock_.redirects;
      const auto hint = response.reason.size() > 11 ? address_node(std::string_view(response.reason).substr(11))
                                                      : std::nullopt;
      retry(h, c, hint.value_or(0));
      return;
    }
    if (response.kind == ResponseKind::error && response.reason == "too many requests in flight") {
      retry(h, c, 0);
      return;
    }
    const auto* release = std::get_if<cluster::Release>(&client.command);
    const bool answers = checker_->on_response(client.session, release != nullptr,
                                              release != nullptr ? release->token : Token{0}, response, h.now(),
                                              client.reusing);
    if (!answers) return;
    ++h.stats().acknowledged;
    count(response);
    client.waiting = false;
    client.last_answered = true;
    if (!client.reusing) lateness_.attempt_ended(client.session, h.now());
    if (observer_ != nullptr) observer_->given_up(h.now(), client.connection);
    client.connection = ConnectionId{};
    if (client.reusing) {
      // Refused: what it holds, it still holds.
      client.reusing = false;
      schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
      return;
    }
    if (response.kind == ResponseKind::granted) {
      client.held = Held{response.key, response.token, !h.workload_prng().chance(p_.let_expire)};
      client.past_tokens.push_back(response.token);
      if (client.past_tokens.size() > 4) client.past_tokens.erase(client.past_tokens.begin());
      schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.hold_max_ms.value)});
      return;
    }
    if (release != nullptr) client.held.reset();
    schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
  }

  // The client never asks again: whatever became of the request, it forgets
  // it (a key it may have been granted, or one it released, runs out).
  void give_up(Harness& h, std::uint32_t c) {
    auto& client = clients_[c];
    ++lock_.given_up;
    if (trace_ != nullptr) trace_->give_up(client.name, h.now());
    client.waiting = false;
    client.last_answered = false;
    client.reusing = false;
    client.held.reset();
    schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
  }

  void count(const Response& r) {
    switch (r.kind) {
      case ResponseKind::granted: ++lock_.granted; break;
      case ResponseKind::timed_out: ++lock_.timed_out; break;
      case ResponseKind::busy: ++lock_.busy; break;
      case ResponseKind::released: ++lock_.released; break;
      case ResponseKind::not_held: ++lock_.not_held; break;
      default: ++lock_.errors; break;
    }
  }

  void on_timer(Harness& h, const work_event::Timer& e) {
    auto& client = clients_[e.client];
    if (!client.waiting || client.timer != e.timer) return;
    if (e.resend) {
      send(h, e.client);
    } else {
      retry(h, e.client, 0);
    }
  }

  // A new connection of client c to its target node. Its id, the number the
  // node and the trace see, keeps the numbering traces have always shown
  // (the node in the top byte, the client in bits 24..47, the client's count
  // of connections below) so that a seed writes the same trace; nothing
  // reads node or client back out of it: connection() looks the id up.
  ClientConnection open_connection(std::uint32_t c) {
    auto& client = clients_[c];
    const ClientConnection opened{client.target, c,
                                  ConnectionId{(std::uint64_t{client.target} << 56) | (std::uint64_t{c} << 24) |
                                               (++client.connections & 0xffffffu)}};
    const bool fresh = connections_.emplace(opened.id.value, opened).second;
    LOCKSTEP_ASSERT(fresh);
    return opened;
  }
  const ClientConnection& connection(ConnectionId id) const {
    const auto found = connections_.find(id.value);
    LOCKSTEP_ASSERT(found != connections_.end());  // a node answers only on connections clients opened
    return found->second;
  }

  // The trace watches the Raft cluster's proposals, elections and snapshot
  // installs; applies come through the nodes' watches, and the rest is
  // written where it happens (restarts, heap checks, replies).
  void watch_for_trace(Harness& h) {
    auto& cluster = h.cluster();
    cluster.on_propose = [this, &h](NodeId id, const std::string& data, const RaftProposeOutcome& outcome, TimeMs clock) {
      trace_->propose(id, data, outcome, clock, h.now());
    };
    cluster.on_leader = [this, &h](NodeId id, const raft::RaftNode& node) { trace_->elect(id, node, h.now()); };
    cluster.on_restore = [this, &h](NodeId id, Machine& machine) { trace_->restore(id, machine.node.machine(), h.now()); };
  }

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

}  // namespace

ClusterRunResult run_cluster_simulation(const ClusterSimParams& params, ClusterTimelineRecorder* timeline,
                                        ClusterTraceWriter* trace) {
  ClusterRunOptions options;
  options.timeline = timeline;
  options.trace = trace;
  return run_cluster_simulation(params, options);
}

ClusterRunResult run_cluster_simulation(const ClusterSimParams& params, const ClusterRunOptions& options) {
  ClusterTimelineRecorder* timeline = options.timeline;
  ClusterSimParams p = params;
  p.raft.stop_at_first_violation = p.raft.stop_at_first_violation && options.stop_at_first_violation;
  // The session table keeps every client, as the checker, which knows no
  // eviction, assumes: a client evicted while it retries would apply twice.
  p.sessions.clients_max = std::max<std::uint64_t>(p.sessions.clients_max, p.clients);
  // Clock errors in [0, 2S]: offsets in [S/2, 3S/2], drift and jumps each
  // within S/4 over the run. Beyond the bound: offsets in [0, 20S], so two
  // clocks may differ by ten times what the checker allows.
  const auto s = p.skew_bound_ms.value;
  const auto total_ms = p.raft.duration_ms.value + cluster_liveness_ms(p).value;
  p.raft.clock_offset_min_ms = DurationMs{p.skew_beyond_bound ? 0 : s / 2};
  p.raft.clock_offset_max_ms = DurationMs{p.skew_beyond_bound ? 20 * s : 3 * s / 2};
  p.raft.clock_drift_max_ppm = s / 4 * 1'000'000 / total_ms;
  p.raft.clock_jump_total_max_ms = DurationMs{s / 4};
  p.raft.clock_jump_max_ms = DurationMs{std::max<std::int64_t>(1, s / 8)};
  LockWorkload workload(p, timeline, options.trace, options.clients);
  RaftHarness<LockWorkload> harness(p.raft, workload);
  ClusterRunResult result;
  result.raft = harness.run();
  result.lock = workload.lock_stats(harness);
  const auto& lateness = workload.lateness(result.raft.stats.simulated_until);
  result.lateness_ms = lateness.worst_ms();
  result.lateness_what = lateness.worst_what();
  if (timeline != nullptr) timeline->finish(result.raft.stats.simulated_until);
  return result;
}

}  // namespace lockstep::sim
