// The lock workload on the Raft harness: each node serves client
// connections in front of its LockMachine and, while it leads, proposes the
// due Expires and Timeouts of its DeadlineHeap; clients send one request at
// a time, follow redirects, and retry on timeout with backoff, each attempt
// on a new connection (the old one is given up, as a client that reconnects
// does), keeping its session so a retry is applied at most once. Nodes are
// not told that a connection was given up, so no Close is proposed: a
// waiter stays queued until answered or moved by its retry. Close is
// covered by the unit tests and the cluster vectors, not here: the checker
// would first need to expect the T that a dropped waiter's retry gets, and
// the model to follow a retry's move to a new connection.
#include "sim/cluster_sim.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "impl/cluster/deadlines.hpp"
#include "impl/cluster/lock_machine.hpp"
#include "sim/cluster_checker.hpp"
#include "sim/cluster_timeline.hpp"
#include "sim/network.hpp"
#include "sim/raft_harness.hpp"

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
  return p;
}

std::string describe(const ClusterSimParams& p) {
  return fmt::format(
      "{} | clients={} keys={} lease={}..{}ms wait<={}ms try={:.2f} expire={:.2f} think<={}ms hold<={}ms "
      "client-latency={}..{}ms response-loss={:.3f} rpc-timeout={}ms skew-bound={}ms{} limits={}/{}/{} bug={}",
      describe(p.raft), p.clients, p.keys, p.lease_min_ms.value, p.lease_max_ms.value, p.wait_max_ms.value, p.try_lock,
      p.let_expire, p.think_max_ms.value, p.hold_max_ms.value, p.client_latency_min_ms.value,
      p.client_latency_max_ms.value, p.response_loss, p.rpc_timeout_ms.value, p.skew_bound_ms.value,
      p.skew_beyond_bound ? " (beyond)" : "", p.limits.max_keys, p.limits.max_waiters_per_key, p.limits.max_waiters,
      cluster::cluster_bug_name(p.bug));
}

DurationMs cluster_liveness_ms(const ClusterSimParams& p) {
  // Every client's last request answered: a wait, retries with backoff
  // after a leader appears, and every lease that was running ended.
  const auto needed = p.raft.leader_bound_ms.value + p.wait_max_ms.value + p.lease_max_ms.value +
                      p.expire_bound_ms.value + 4 * (8 * p.rpc_timeout_ms.value + p.backoff_max_ms.value);
  return DurationMs{std::max(raft_liveness_ms(p.raft).value, needed)};
}

namespace {

using raft::NodeId;

// What travels between clients and nodes (not through the Raft network).
struct ClientMessage {
  enum class Kind : std::uint8_t { request, response, redirect };
  Kind kind = Kind::request;
  NodeId node = 0;
  std::uint32_t client = 0;
  ConnectionId connection;
  cluster::Command command;  // request: the command, unstamped
  Response response;         // response
  NodeId hint = 0;           // redirect: the leader the node knows, or 0
};

// Workload events: HarnessEvent.slot is the kind, .node the client (act,
// timeout) and .generation the timer generation or the message's pool slot.
enum class WorkEvent : std::uint32_t { act, timeout, to_node, to_client };

// Connection ids carry their node (so a node answers only its own) and are
// unique across the run.
constexpr NodeId connection_node(ConnectionId c) { return static_cast<NodeId>(c.value >> 56); }

class LockWorkload {
 public:
  using Machine = cluster::LockMachine;
  using Harness = RaftHarness<LockWorkload>;

  LockWorkload(const ClusterSimParams& params, ClusterTimelineRecorder* timeline)
      : p_(params),
        timeline_(timeline),
        pool_(1 << 20),
        heaps_(params.raft.nodes + 1),
        heap_term_(params.raft.nodes + 1, 0),
        ticks_(params.raft.nodes + 1, 0),
        stash_(params.raft.nodes + 1),
        open_(params.raft.nodes + 1),
        clients_(params.clients + 1) {
    for (auto& heap : heaps_) heap = cluster::DeadlineHeap(heap_config());
  }

  Machine make_machine() const {
    cluster::MachineConfig config;
    config.limits = p_.limits;
    config.sessions = p_.sessions;
    config.bug = p_.bug;
    return Machine(config);
  }

  void start(Harness& h) {
    checker_.emplace(h.checker(), p_.limits, p_.sessions, p_.skew_bound_ms);
    h.cluster().on_before_apply = [this](NodeId id, const raft::Entry& entry, const Machine& machine) {
      checker_->before_apply(id, entry, machine);
    };
    for (std::uint32_t c = 1; c <= p_.clients; ++c) {
      clients_[c].id = c;
      clients_[c].target = static_cast<NodeId>(1 + c % p_.raft.nodes);
      schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
    }
  }

  void on_event(Harness& h, const HarnessEvent& e) {
    switch (static_cast<WorkEvent>(e.slot)) {
      case WorkEvent::act:
        act(h, e.node);
        return;
      case WorkEvent::timeout:
        on_timer(h, e.node, e.generation);
        return;
      case WorkEvent::to_node:
        at_node(h, pool_.take(static_cast<std::uint32_t>(e.generation)));
        return;
      case WorkEvent::to_client:
        at_client(h, pool_.take(static_cast<std::uint32_t>(e.generation)));
        return;
    }
  }

  void on_apply(Harness& h, NodeId id, const raft::Entry& entry, Machine& machine) {
    auto applied = machine.take_applied();
    checker_->after_apply(id, entry, machine, applied, h.now());
    if (timeline_ != nullptr) timeline_->after_apply(entry, machine, applied, h.now());
    auto& heap = heaps_[id];
    if (heap.leading()) heap.note_applied(applied, machine);
    for (auto& out : applied.responses) {
      if (connection_node(out.connection) != id || !open_[id].contains(out.connection)) continue;
      if (h.workload_prng().chance(p_.response_loss) && !h.in_liveness()) continue;  // the connection broke
      ClientMessage m;
      m.kind = ClientMessage::Kind::response;
      m.node = id;
      m.client = static_cast<std::uint32_t>((out.connection.value >> 24) & 0xffffffu);
      m.connection = out.connection;
      m.response = std::move(out.response);
      to_client(h, std::move(m));
    }
  }

  void on_tick(Harness& h, NodeId id) {
    auto& heap = heaps_[id];
    auto& cluster = h.cluster();
    if (heap.leading()) {
      const auto& machine = cluster.machine(id);
      for (const auto& deadline : machine.deadlines()) {
        if (heap.tracks(deadline)) continue;
        h.checker().fail("deadline-heap",
                         fmt::format("leader {} (term {}) does not track the {} of `{}` (id {}) at {} ms of its applied "
                                     "state",
                                     id, cluster.node(id).term(),
                                     deadline.target.kind == cluster::DeadlineTarget::Kind::expire ? "expiry" : "wait deadline",
                                     deadline.target.key, deadline.target.id, deadline.at.value));
        return;
      }
      heap.check_invariants(machine);
      for (auto& command : heap.due(h.local(id), machine)) {
        if (std::holds_alternative<cluster::Expire>(command)) {
          ++lock_.expires_proposed;
        } else {
          ++lock_.timeouts_proposed;
        }
        auto out = cluster.propose(id, cluster::encode(command), h.local(id));
        h.route(std::move(out.messages));
        if (!cluster.alive(id)) return;
        // Refused: hand it back, to be proposed at the next tick.
        if (out.kind != raft::ProposeResult::Kind::accepted) heap.lost(*cluster::deadline_target(command));
      }
    }
    // The table's own invariants, on every node now and then: a full check
    // costs as much as hundreds of applies.
    if (++ticks_[id] % table_check_ticks == 0) cluster.machine(id).check_invariants();
    compact(h, id);
  }

  void after_event(Harness& h) {
    auto& cluster = h.cluster();
    for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
      if (!cluster.alive(id)) {
        if (timeline_ != nullptr) timeline_->node_state(id, false, 0, h.now());
        continue;
      }
      const auto& node = cluster.node(id);
      auto& heap = heaps_[id];
      const bool leads = node.role() == raft::Role::leader;
      if (timeline_ != nullptr) timeline_->node_state(id, true, leads ? node.term() : 0, h.now());
      if (leads && (!heap.leading() || heap_term_[id] != node.term())) {
        // The heap of a new leader comes from its applied state.
        if (heap.leading()) heap.step_down();
        heap.become_leader(cluster.machine(id));
        heap_term_[id] = node.term();
      } else if (!leads && heap.leading()) {
        heap.step_down();
      }
    }
  }

  void on_down(Harness&, NodeId id) {
    open_[id].clear();  // its connections died with it
    stash_[id].reset();
    heaps_[id].step_down();
  }

  void on_restart(Harness&, NodeId id) {
    heaps_[id] = cluster::DeadlineHeap(heap_config());
    heap_term_[id] = 0;
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
    const auto& machine = cluster.machine(leader);
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
        if (waiter.deadline < limit) {
          h.checker().fail("liveness", fmt::format("`{}` still waits for key `{}` at the end, past its deadline", waiter.owner, key));
          return;
        }
      }
    }
    // Every node that applied the whole log holds the model's table.
    for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
      if (cluster.alive(id)) checker_->compare_final(id, cluster.machine(id));
    }
  }

  const ClusterLockStats& lock_stats() {
    lock_.expires_applied = checker_->expires_applied();
    lock_.timeouts_applied = checker_->timeouts_applied();
    return lock_;
  }

 private:
  struct Held {
    std::string key;
    Token token;
    bool releases = true;  // else it lets the lease run out
  };
  struct Client {
    std::uint32_t id = 0;
    std::uint64_t sequence = 0;
    bool waiting = false;
    cluster::Session session;
    cluster::Command command;  // the outstanding request, unstamped
    ConnectionId connection;   // the current attempt's
    NodeId target = 1;
    std::uint32_t attempts = 0;
    std::uint64_t timer = 0;
    std::uint64_t connections = 0;
    std::optional<Held> held;
    std::vector<Token> past_tokens;  // for stale releases; the last few
  };

  cluster::DeadlineConfig heap_config() const {
    cluster::DeadlineConfig config;
    config.bug = p_.bug;
    return config;
  }

  void schedule_act(Harness& h, std::uint32_t client, DurationMs after) {
    h.push(h.now() + after, HarnessEvent{HarnessEventKind::workload, client, static_cast<std::uint32_t>(WorkEvent::act), 0});
  }

  // The client's next request, or nothing once the workload stopped.
  void act(Harness& h, std::uint32_t c) {
    auto& client = clients_[c];
    if (client.waiting || h.in_liveness()) return;
    auto& prng = h.workload_prng();
    client.session = cluster::Session{c, ++client.sequence};
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
    ++lock_.requests;
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
    client.connection = ConnectionId{(std::uint64_t{client.target} << 56) | (std::uint64_t{c} << 24) |
                                     (++client.connections & 0xffffffu)};
    checker_->on_send(client.session, lease_of(client.command), h.now());
    ClientMessage m;
    m.kind = ClientMessage::Kind::request;
    m.node = client.target;
    m.client = c;
    m.connection = client.connection;
    m.command = client.command;
    const auto delay = latency(h);
    const auto slot = pool_.put(std::move(m));
    h.push(h.now() + delay, HarnessEvent{HarnessEventKind::workload, 0, static_cast<std::uint32_t>(WorkEvent::to_node), slot});
    client.timer = ++timers_;
    // The timeout doubles with each attempt (up to 8 times): a cluster slower
    // than its clients' retries would otherwise drown in their copies.
    const auto timeout = DurationMs{p_.rpc_timeout_ms.value << std::min<std::uint32_t>(client.attempts - 1, 3)};
    h.push(h.now() + wait_of(client.command) + timeout,
           HarnessEvent{HarnessEventKind::workload, c, static_cast<std::uint32_t>(WorkEvent::timeout), client.timer});
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
    client.connection = ConnectionId{};  // nothing more is heard on the old one
    h.push(h.now() + backoff, HarnessEvent{HarnessEventKind::workload, c, static_cast<std::uint32_t>(WorkEvent::timeout),
                                           client.timer | resend_bit});
  }

  void at_node(Harness& h, ClientMessage m) {
    auto& cluster = h.cluster();
    const NodeId id = m.node;
    if (!cluster.alive(id)) return;  // the connection never opens
    open_[id].insert(m.connection);
    auto command = m.command;
    const auto now = h.local(id);
    if (auto* a = std::get_if<cluster::Acquire>(&command)) {
      a->connection = m.connection;
      a->now = now;
    } else if (auto* r = std::get_if<cluster::Release>(&command)) {
      r->connection = m.connection;
      r->now = now;
    }
    auto out = cluster.propose(id, cluster::encode(command), now);
    h.route(std::move(out.messages));
    if (out.kind == raft::ProposeResult::Kind::accepted) {
      ++h.stats().proposed;
      if (p_.bug == cluster::ClusterBug::answer_before_commit) answer_before_commit(h, m, command);
      return;  // answered once applied
    }
    if (out.kind == raft::ProposeResult::Kind::too_many_uncommitted) ++h.stats().refused;
    ++lock_.redirects;
    ClientMessage back;
    back.kind = ClientMessage::Kind::redirect;
    back.node = id;
    back.client = m.client;
    back.connection = m.connection;
    back.hint = out.kind == raft::ProposeResult::Kind::not_leader ? out.leader_hint : id;
    to_client(h, std::move(back));
  }

  // The answer-before-commit bug: the leader grants at once an Acquire of a
  // key its applied table shows free, with the token it expects to issue,
  // as if the entry could not be lost or overtaken before it commits.
  void answer_before_commit(Harness& h, const ClientMessage& request, const cluster::Command& command) {
    const auto* a = std::get_if<cluster::Acquire>(&command);
    const auto& machine = h.cluster().machine(request.node);
    if (a == nullptr || machine.keys().contains(a->key)) return;
    ClientMessage m;
    m.kind = ClientMessage::Kind::response;
    m.node = request.node;
    m.client = request.client;
    m.connection = request.connection;
    m.response = Response::granted(machine.next_token(), a->owner, a->key);
    to_client(h, std::move(m));
  }

  void to_client(Harness& h, ClientMessage m) {
    const auto delay = latency(h);
    const auto slot = pool_.put(std::move(m));
    h.push(h.now() + delay, HarnessEvent{HarnessEventKind::workload, 0, static_cast<std::uint32_t>(WorkEvent::to_client), slot});
  }

  void at_client(Harness& h, ClientMessage m) {
    auto& client = clients_[m.client];
    if (!client.waiting || m.connection != client.connection) return;  // a connection given up
    if (m.kind == ClientMessage::Kind::redirect) {
      retry(h, m.client, m.hint);
      return;
    }
    const auto* release = std::get_if<cluster::Release>(&client.command);
    const bool answers = checker_->on_response(client.session, release != nullptr,
                                              release != nullptr ? release->token : Token{0}, m.response, h.now());
    if (!answers) return;
    ++h.stats().acknowledged;
    count(m.response);
    client.waiting = false;
    client.connection = ConnectionId{};
    if (m.response.kind == ResponseKind::granted) {
      client.held = Held{m.response.key, m.response.token, !h.workload_prng().chance(p_.let_expire)};
      client.past_tokens.push_back(m.response.token);
      if (client.past_tokens.size() > 4) client.past_tokens.erase(client.past_tokens.begin());
      schedule_act(h, m.client, DurationMs{h.workload_prng().between(0, p_.hold_max_ms.value)});
      return;
    }
    if (release != nullptr) client.held.reset();
    schedule_act(h, m.client, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
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

  // The lock table can snapshot only its current state: a node takes one
  // when enough entries applied and compacts with it once log_keep more
  // applied, so slow followers still find those entries in the log.
  void compact(Harness& h, NodeId id) {
    auto& cluster = h.cluster();
    const auto& node = cluster.node(id);
    auto& stash = stash_[id];
    const auto upto = std::min(node.applied(), node.commit());
    if (!stash && upto >= node.snapshot().index + p_.raft.compact_threshold && upto == cluster.machine(id).applied()) {
      stash = Stash{upto, cluster.machine(id).snapshot_through(upto)};
    }
    if (stash && upto >= stash->index + p_.raft.log_keep) {
      ++lock_.snapshots;
      h.route(cluster.compact_with(id, stash->index, std::move(stash->data)));
      stash.reset();
    }
  }

  // The timer event is both the attempt's timeout and a backoff's end,
  // which resend_bit marks; a timer the client has since replaced is stale.
  static constexpr std::uint64_t resend_bit = std::uint64_t{1} << 62;
  void on_timer(Harness& h, std::uint32_t c, std::uint64_t generation) {
    auto& client = clients_[c];
    if (!client.waiting || client.timer != (generation & ~resend_bit)) return;
    if ((generation & resend_bit) != 0) {
      send(h, c);
    } else {
      retry(h, c, 0);
    }
  }

  struct Stash {
    raft::Index index = 0;
    std::string data;
  };

  ClusterSimParams p_;
  ClusterTimelineRecorder* timeline_;  // or nullptr
  std::optional<ClusterChecker> checker_;  // made in start(): it reports to the harness's Raft checker
  InFlightPool<ClientMessage> pool_;
  std::vector<cluster::DeadlineHeap> heaps_;
  std::vector<raft::Term> heap_term_;
  static constexpr std::uint64_t table_check_ticks = 50;
  std::vector<std::uint64_t> ticks_;
  std::vector<std::optional<Stash>> stash_;
  std::vector<std::set<ConnectionId>> open_;
  std::vector<Client> clients_;
  std::uint64_t timers_ = 0;
  ClusterLockStats lock_;

};

}  // namespace

ClusterRunResult run_cluster_simulation(const ClusterSimParams& params, ClusterTimelineRecorder* timeline) {
  ClusterSimParams p = params;
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
  LockWorkload workload(p, timeline);
  RaftHarness<LockWorkload> harness(p.raft, workload);
  ClusterRunResult result;
  result.raft = harness.run();
  result.lock = workload.lock_stats();
  if (timeline != nullptr) timeline->finish(result.raft.stats.simulated_until);
  return result;
}

}  // namespace lockstep::sim
