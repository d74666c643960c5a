#include "drivers/server/cluster_server.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "impl/cluster/node.hpp"
#include "drivers/etcd/log.hpp"
#include "drivers/etcd/membership.hpp"
#include "impl/line_framer.hpp"
#include "drivers/server/line_loop.hpp"

namespace lockstep {

namespace {

using namespace etcd::log_event;
using etcd::LogEvent;

constexpr std::uint64_t log_key = LoopSockets::signal_key - 1;
constexpr std::uint64_t claim_key = LoopSockets::signal_key - 2;
// Connection ids: the incarnation in the high bits, a counter in the low.
constexpr int connection_counter_bits = 24;
// Keys of recent log entries kept to name the last one a snapshot covers.
constexpr std::size_t recent_keys_max = 4'096;

std::string member_ids(const etcd::Membership& membership) {
  std::string ids;
  for (const auto& m : membership.members) ids += (ids.empty() ? "" : ",") + m.node_id;
  return ids;
}

std::int64_t wall_clock_ms() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

cluster::NodeConfig node_config_of(const ClusterServerConfig& config) {
  cluster::NodeConfig node_config;
  node_config.limits = config.limits;
  node_config.sessions = config.sessions;
  node_config.waiter_grace_ms = DurationMs{config.waiter_grace_ms};
  node_config.bug = config.bug;
  node_config.test_clock = config.test_clock;
  node_config.in_flight_max = config.in_flight_max;
  node_config.snapshot_every_entries = config.snapshot_every;
  node_config.log_keep_entries = 0;  // a node behind a snapshot catches up from it
  return node_config;
}

// `config` passed validate(): its members parse.
etcd::JoinRequest join_request_of(const ClusterServerConfig& config, std::string& error) {
  etcd::JoinRequest join;
  join.node_id = config.node_id;
  join.advertise = config.advertise;
  join.init = config.init;
  if (!config.members.empty()) join.members = *etcd::parse_members(config.members, error);
  join.ttl_s = config.leader_ttl_s;
  join.call_timeout = std::chrono::milliseconds{config.etcd_timeout_ms};
  join.start_timeout = std::chrono::milliseconds{config.etcd_timeout_ms};
  return join;
}

struct Connection : SocketConnection {
  bool node_knows = true;  // false once the node forgot it (its close, or on_close called)

  using SocketConnection::SocketConnection;
  // Input ended and every line it brought was handed to the node.
  bool drained() const { return !reading && !has_work(); }
  bool finished() const { return slow || (drained() && !node_knows && pending_output() == 0); }
};

class ClusterServer : LineLoop<Connection> {
 public:
  explicit ClusterServer(const ClusterServerConfig& config) : config_(config) {}
  ~ClusterServer();
  int run();

 private:
  int start();
  bool join_cluster(const etcd::Target& target, std::string& error);
  void start_log(const etcd::Target& target);
  void catch_up();
  void print_started();
  bool listen_now();
  void accept_all();
  void handle_lines(Connection& c);
  void end_input(Connection& c);
  void close_connection(Connection& c);
  void handle_log_events();
  void on_log_event(LogEvent& event);
  void update_leadership();
  void tell_leader_address();
  void handle(cluster::NodeOutputs& out);
  void print_status();
  TimeMs now();
  ConnectionId next_connection_id();

  ClusterServerConfig config_;
  std::unique_ptr<cluster::Node> node_;
  std::unique_ptr<etcd::NodeClaim> claim_;
  std::unique_ptr<etcd::EtcdLog> log_;
  bool listening_ = false;
  int exit_code_ = 0;
  bool stopping_ = false;

  TimeMs last_now_{0};

  // Leadership as etcd tells it: this node leads at epoch E once it was
  // elected at E, the watch showed E (after every entry before it), and E
  // was not deposed since.
  std::uint64_t elected_ = 0;
  std::uint64_t seen_ = 0;
  etcd::LeaderRecord seen_leader_;  // the record of epoch seen_
  std::uint64_t deposed_through_ = 0;
  std::uint64_t leading_ = 0;
  std::uint64_t restored_index_ = 0;  // the last snapshot restored, 0: none
  std::string stop_reason_;  // why etcd's side ended the current leadership, if it said

  std::uint64_t incarnation_ = 0;
  std::uint64_t connection_counter_ = 0;
  std::deque<std::pair<cluster::LogIndex, std::string>> recent_keys_;
  std::uint64_t slow_closed_ = 0, lines_ = 0, snapshots_ = 0;
};

ClusterServer::~ClusterServer() {
  if (log_) log_->stop();
  if (claim_) claim_->release();
}

// The node's clock: the wall clock in ms, never going back, and never
// behind an instant this node applied (a node whose clock is behind the
// leader's stamps waits for its clock rather than stamp lower ones).
TimeMs ClusterServer::now() {
  last_now_ = std::max({last_now_, TimeMs{wall_clock_ms()}, node_->machine().clock()});
  return last_now_;
}

ConnectionId ClusterServer::next_connection_id() {
  if (connection_counter_ + 1 >= (std::uint64_t{1} << connection_counter_bits)) {
    // This incarnation named all the connections it can: take another.
    std::string error;
    const auto fresh = log_->new_incarnation(error);
    if (fresh) {
      incarnation_ = *fresh;
      connection_counter_ = 0;
    }
  }
  return ConnectionId{(incarnation_ << connection_counter_bits) | ++connection_counter_};
}

int ClusterServer::start() {
  if (auto error = validate(config_)) {
    fmt::print(stderr, "lockstep serve: {}\n", *error);
    return 2;
  }
  std::string error;
  const auto target = etcd::parse_endpoints(config_.etcd_endpoints, error);
  node_ = std::make_unique<cluster::Node>(node_config_of(config_));

  sockets_.open({SIGUSR1});  // SIGUSR1: the status line
  // Bound now, so that the port is known (and taken) before the node joins;
  // listening waits until it has caught up (listen_now).
  if (auto bind_error = sockets_.bind(config_.host, config_.port)) {
    fmt::print(stderr, "lockstep serve: {}\n", *bind_error);
    return 2;
  }

  if (!join_cluster(*target, error)) return 2;
  start_log(*target);

  // Catch up with what etcd holds before serving anyone.
  catch_up();
  if (exit_code_ != 0) return exit_code_;
  const auto incarnation = log_->new_incarnation(error);
  if (!incarnation) {
    fmt::print(stderr, "lockstep serve: cannot register this node in etcd at {}: {}\n", config_.etcd_endpoints, error);
    return 2;
  }
  incarnation_ = *incarnation;

  // With the test clock this is a one-node cluster for exact replay: its
  // clients come once it leads, so that none is told `E not-leader`.
  if (!config_.test_clock && !listen_now()) return 2;

  if (!config_.quiet) print_started();
  return 0;
}

// The cluster first: a node starts only as a member of the cluster under
// its prefix, at its address, and as the only process with its id.
bool ClusterServer::join_cluster(const etcd::Target& target, std::string& error) {
  claim_ = etcd::NodeClaim::join(target, config_.prefix, join_request_of(config_, error), error);
  if (!claim_) {
    fmt::print(stderr, "lockstep serve: {}\n", error);
    return false;
  }
  sockets_.watch(claim_->fd(), claim_key);
  return true;
}

void ClusterServer::start_log(const etcd::Target& target) {
  etcd::LogConfig log_config;
  log_config.target = target;
  log_config.prefix = config_.prefix;
  log_config.self = etcd::LeaderRecord{config_.node_id, config_.advertise};
  log_config.leader_ttl_s = config_.leader_ttl_s;
  log_config.call_timeout = std::chrono::milliseconds{config_.etcd_timeout_ms};
  log_config.start_timeout = std::chrono::milliseconds{config_.etcd_timeout_ms};
  log_ = std::make_unique<etcd::EtcdLog>(log_config);
  sockets_.watch(log_->fd(), log_key);
  log_->start();
}

// Handles etcd's events until the log says it is ready (or something
// failed: exit_code_ then says so).
void ClusterServer::catch_up() {
  bool ready = false;
  while (!ready && exit_code_ == 0) {
    pollfd descriptor{log_->fd(), POLLIN, 0};
    ::poll(&descriptor, 1, 1'000);
    for (auto& log_event : log_->take_events()) {
      if (std::holds_alternative<Ready>(log_event)) ready = true;
      on_log_event(log_event);
      if (exit_code_ != 0) break;
    }
  }
}

void ClusterServer::print_started() {
  const auto& l = config_.limits;
  fmt::print(stderr,
             "lockstep serve: cluster node {} on {}:{} (advertised {}), etcd {} prefix '{}' (cluster {}{}, members "
             "{}), leader TTL {} s "
             "(max_keys={} max_waiters_per_key={} max_waiters={} max_lease_ms={} max_wait_ms={} "
             "max_line_bytes={} max_connections={} session_window={} session_clients_max={} waiter_grace_ms={}{}{}), "
             "applied {}{}\n",
             config_.node_id, config_.host, config_.port, config_.advertise, config_.etcd_endpoints, config_.prefix,
             claim_->membership().cluster_id, claim_->created() ? " created now" : "",
             member_ids(claim_->membership()), config_.leader_ttl_s, l.max_keys, l.max_waiters_per_key, l.max_waiters, l.max_lease_ms.value,
             l.max_wait_ms.value, l.max_line_bytes, config_.max_connections, config_.sessions.window,
             config_.sessions.clients_max, config_.waiter_grace_ms, config_.test_clock ? ", test clock" : "",
             config_.bug == cluster::ClusterBug::none
                 ? ""
                 : fmt::format(", injected bug {}", cluster::cluster_bug_name(config_.bug)),
             node_->applied(),
             restored_index_ == 0 ? "" : fmt::format(" (from the snapshot of index {})", restored_index_));
}

bool ClusterServer::listen_now() {
  if (listening_) return true;
  if (auto error = sockets_.listen(config_.host, config_.port)) {
    fmt::print(stderr, "lockstep serve: {}\n", *error);
    return false;
  }
  listening_ = true;
  return true;
}

int ClusterServer::run() {
  if (const int code = start(); code != 0) return code;
  std::vector<epoll_event> events;
  while (!stopping_ && exit_code_ == 0) {
    const int ready = wait(events, timeout_ms(config_.test_clock, node_->next_due(), now()));
    if (ready < 0) {
      fmt::print(stderr, "lockstep serve: epoll_wait: {}\n", std::strerror(errno));
      return 2;
    }
    for (int i = 0; i < ready; ++i) {
      const auto& event = events[static_cast<std::size_t>(i)];
      if (event.data.u64 == LoopSockets::signal_key) {
        signalfd_siginfo info{};
        while (::read(sockets_.signal_fd(), &info, sizeof info) == sizeof info) {
          if (info.ssi_signo == SIGUSR1) {
            print_status();
          } else {
            stopping_ = true;
          }
        }
      } else if (event.data.u64 == log_key) {
        handle_log_events();
      } else if (event.data.u64 == claim_key) {
        for (const auto& reason : claim_->take_lost()) {
          fmt::print(stderr, "lockstep serve: {}\n", reason);
          exit_code_ = 2;
        }
      } else if (event.data.u64 == LoopSockets::listener_key) {
        accept_all();
      } else {
        client_event(event, [this](Connection& c) { set_interest(c); });
      }
    }
    {
      // With the test clock the node ignores `now`; a tick then lets it go on
      // with a `C` whose commands had to be proposed again.
      cluster::NodeOutputs out;
      node_->on_tick(now(), out);
      handle(out);
    }
    end_turn([this](Connection& c) { handle_lines(c); }, [this](Connection& c) { close_connection(c); });
  }
  if (exit_code_ != 0) return exit_code_;
  log_->stop();  // resigns first, so another node need not wait out the lease
  claim_->release();  // and frees its id for the next run at once
  if (!config_.quiet) {
    fmt::print(stderr,
               "lockstep serve: node {} stopped ({} connections accepted, {} refused at the limit, {} closed for "
               "not reading, {} lines, {} snapshots stored, applied {})\n",
               config_.node_id, counts_.accepted, counts_.refused, slow_closed_, lines_, snapshots_, node_->applied());
  }
  return 0;
}

// ---- etcd's events ------------------------------------------------------------

void ClusterServer::handle_log_events() {
  for (auto& event : log_->take_events()) {
    on_log_event(event);
    if (exit_code_ != 0) return;
  }
}

void ClusterServer::on_log_event(LogEvent& event) {
  cluster::NodeOutputs out;
  if (auto* restored = std::get_if<Restored>(&event)) {
    restored_index_ = restored->index;
    try {
      node_->restore(cluster::TableSnapshot{restored->index, std::move(restored->state)}, out);
    } catch (const std::invalid_argument& error) {
      fmt::print(stderr, "lockstep serve: the snapshot of index {} in etcd cannot be restored: {}\n", restored->index,
                 error.what());
      exit_code_ = 2;
      return;
    }
  } else if (auto* committed = std::get_if<Committed>(&event)) {
    node_->on_committed(committed->index, committed->bytes, out);
    recent_keys_.emplace_back(committed->index, std::move(committed->key));
    if (recent_keys_.size() > recent_keys_max) recent_keys_.pop_front();
  } else if (auto* seen = std::get_if<LeaderSeen>(&event)) {
    seen_ = seen->epoch;
    seen_leader_ = seen->leader;
    tell_leader_address();
  } else if (std::holds_alternative<LeaderGone>(event)) {
    seen_ = 0;
    seen_leader_ = {};
    tell_leader_address();
    log_->campaign_now();
  } else if (auto* elected = std::get_if<Elected>(&event)) {
    elected_ = std::max(elected_, elected->epoch);
  } else if (auto* deposed = std::get_if<Deposed>(&event)) {
    deposed_through_ = std::max(deposed_through_, deposed->epoch);
    if (deposed->epoch == leading_) stop_reason_ = deposed->reason;
  } else if (auto* failed = std::get_if<ProposalsFailed>(&event)) {
    for (const auto id : failed->ids) node_->on_proposal_failed(id, out);
  } else if (std::holds_alternative<SnapshotSaved>(event)) {
    ++snapshots_;
  } else if (auto* fatal = std::get_if<Failed>(&event)) {
    fmt::print(stderr, "lockstep serve: {}\n", fatal->reason);
    exit_code_ = 2;
    return;
  }
  handle(out);
  update_leadership();
}

// What this node's redirects name (docs/protocol.md, "Cluster nodes on the
// wire"): the leader etcd shows, unless that is this node. While it leads
// it redirects nothing; once it no longer leads, the record still naming it
// (its lease lapsed while it was paused, or etcd lost its majority and
// shows nothing new) would send clients back to a node that does not lead,
// and a client on this very node would ask it again: it answers a bare
// `E not-leader` until etcd shows another leader. A record of an earlier
// run of this node is the same.
void ClusterServer::tell_leader_address() {
  const bool names_self = seen_leader_.node_id == config_.node_id || seen_leader_.advertise == config_.advertise;
  node_->on_leader_address(seen_ == 0 || names_self ? std::string() : seen_leader_.advertise);
}

void ClusterServer::update_leadership() {
  const bool should_lead = elected_ != 0 && elected_ == seen_ && elected_ > deposed_through_;
  cluster::NodeOutputs out;
  if (leading_ != 0 && (!should_lead || leading_ != elected_)) {
    if (!config_.quiet) {
      const auto why = !stop_reason_.empty() ? stop_reason_
                       : seen_ == 0          ? std::string("its election key is gone")
                                             : fmt::format("another node leads (epoch {})", seen_);
      fmt::print(stderr, "lockstep serve: node {} stops leading (epoch {}): {}\n", config_.node_id, leading_, why);
    }
    leading_ = 0;
    stop_reason_.clear();
    node_->on_leadership_lost(out);
    handle(out);
  }
  if (should_lead && leading_ == 0) {
    leading_ = elected_;
    log_->begin_epoch(leading_);
    node_->on_leadership_gained(cluster::Epoch{leading_}, now(), out);
    handle(out);
    if (!config_.quiet) {
      fmt::print(stderr, "lockstep serve: node {} leads (epoch {}, applied {})\n", config_.node_id, leading_,
                 node_->applied());
    }
    if (config_.test_clock && !listen_now()) exit_code_ = 2;
  }
}

// ---- the node's outputs -----------------------------------------------------

void ClusterServer::handle(cluster::NodeOutputs& out) {
  // 1. Proposals, in order, each under the epoch it was made in; etcd fences
  // one whose epoch has ended, and the log reports it failed.
  for (auto& proposal : out.proposals) log_->propose(proposal.epoch.value, proposal.id, std::move(proposal.bytes));
  // 2. Lines and closes, in order.
  for (const auto& message : out.to_clients) {
    const auto found = connections_.find(message.connection);
    if (found == connections_.end()) continue;  // not ours, or gone: nothing is owed to it
    Connection& c = *found->second;
    if (message.kind == cluster::ToClient::Kind::close) {
      c.node_knows = false;
      c.reading = false;
      c.discarding = true;
      set_interest(c);
      continue;
    }
    if (c.slow) continue;
    c.output += cluster::to_client_line(message);
    c.output += '\n';
    if (c.pending_output() > config_.max_output_bytes) {
      // A client that does not read: closed before it can make the node
      // hold more.
      c.slow = true;
      ++slow_closed_;
    }
  }
  // 3. A snapshot: the leader stores it, and etcd drops the log it covers.
  if (out.compaction && leading_ != 0) {
    const auto index = out.compaction->index;
    const auto found = std::find_if(recent_keys_.rbegin(), recent_keys_.rend(),
                                    [&](const auto& entry) { return entry.first == index; });
    if (found != recent_keys_.rend()) {
      log_->save_snapshot(leading_, index, found->second, std::move(out.compaction->bytes));
    }
  }
  out = cluster::NodeOutputs{};
}

// ---- clients ------------------------------------------------------------------

void ClusterServer::accept_all() {
  accept_all_clients(config_.max_connections, config_.limits.max_line_bytes, [this] { return next_connection_id(); },
                     [this](ConnectionId id) {
                       cluster::NodeOutputs out;
                       node_->on_connect(id, out);
                       handle(out);
                     });
}

void ClusterServer::handle_lines(Connection& c) {
  for (std::uint64_t handled = 0; handled < config_.lines_per_turn && c.has_work(); ++handled) {
    const auto line = c.framer.next_line();
    ++lines_;
    cluster::NodeOutputs out;
    node_->on_line(c.id, *line, now(), out);
    handle(out);
  }
  if (!c.discarding && c.framer.overlong() && !c.framer.has_complete_line()) {
    // A line past the limit: E, then the connection closes (docs/protocol.md, "Responses").
    c.output += format_response(Response::error(fmt::format("line longer than {} bytes", config_.limits.max_line_bytes)));
    c.output += '\n';
    c.discarding = true;
    end_input(c);
  }
  // Input ended and its lines are in: the node forgets the connection (a
  // leader proposes a Close for its waiters).
  if (c.drained() && c.node_knows) end_input(c);
}

// No more input from `c`: the node is told it closed; what is owed to it
// and already produced is still written.
void ClusterServer::end_input(Connection& c) {
  c.reading = false;
  if (c.node_knows) {
    c.node_knows = false;
    cluster::NodeOutputs out;
    node_->on_close(c.id, now(), out);
    handle(out);
  }
  set_interest(c);
}

void ClusterServer::close_connection(Connection& c) {
  const ConnectionId id = c.id;
  const bool node_knows = c.node_knows;
  drop(c);
  if (node_knows) {
    cluster::NodeOutputs out;
    node_->on_close(id, now(), out);
    handle(out);
  }
}

void ClusterServer::print_status() {
  const auto& machine = node_->machine();
  fmt::print(stderr,
             "lockstep serve: status node={} applied={} digest={:016x} leading={} epoch={} keys={} waiters={} "
             "connections={} in_flight={} clock_ms={} entries_written={} proposals_written={}\n",
             config_.node_id, node_->applied(), node_->digest(), leading_ != 0 ? "yes" : "no", leading_,
             machine.keys().size(), machine.waiter_count(), connections_.size(), node_->in_flight(),
             machine.clock().value, log_->entries_written(), log_->proposals_written());
}

}  // namespace

std::optional<std::string> validate(const ClusterServerConfig& config) {
  if (auto error = validate(config.limits)) return error;
  std::string error;
  if (config.etcd_endpoints.empty()) {
    return "--etcd is required with --cluster: etcd's client addresses, host:port, comma-separated";
  }
  if (!etcd::parse_endpoints(config.etcd_endpoints, error)) return "--etcd: " + error;
  if (!etcd::valid_prefix(config.prefix, error)) return "--prefix: " + error;
  if (config.node_id.empty()) return "--node-id is required with --cluster: this node's id in its cluster";
  if (!etcd::valid_node_id(config.node_id)) return "--node-id must be 1 to 64 printable bytes without space";
  if (!config.members.empty()) {
    if (!config.init) return "--members needs --init: it names the members of the cluster --init creates";
    const auto members = etcd::parse_members(config.members, error);
    if (!members) return "--members: " + error;
    if (!etcd::find_member(etcd::Membership{"", *members}, config.node_id)) {
      return fmt::format("--members does not name --node-id {}", config.node_id);
    }
  }
  const auto colon = config.advertise.rfind(':');
  if (config.advertise.empty() || colon == std::string::npos || colon == 0 || !is_valid_name(config.advertise)) {
    return "--advertise must be host:port, the address clients reach this node at";
  }
  in_addr address{};
  if (inet_pton(AF_INET, config.host.c_str(), &address) != 1) {
    return fmt::format("--host: '{}' is not an IPv4 address", config.host);
  }
  if (config.leader_ttl_s < 1 || config.leader_ttl_s > 3'600) return "--leader-ttl-s must be in 1..3600";
  if (config.etcd_timeout_ms < 100 || config.etcd_timeout_ms > 600'000) {
    return "--etcd-timeout-ms must be in 100..600000";
  }
  if (config.sessions.window < 1 || config.sessions.window > 1'024) return "--session-window must be in 1..1024";
  if (config.sessions.clients_max < 1 || config.sessions.clients_max > 10'000'000) {
    return "--session-clients-max must be in 1..10000000";
  }
  if (config.waiter_grace_ms < 0 || config.waiter_grace_ms > cluster::waiter_grace_max.value) {
    return fmt::format("--waiter-grace-ms must be in 0..{}", cluster::waiter_grace_max.value);
  }
  if (config.in_flight_max < 1 || config.in_flight_max > 10'000'000) return "--max-in-flight must be in 1..10000000";
  if (config.snapshot_every > 1'000'000'000) return "--snapshot-every must be in 0..1000000000";
  if (config.max_connections < 1 || config.max_connections > 1'000'000) {
    return "--max-connections must be in 1..1000000";
  }
  if (config.max_output_bytes < 1'024 || config.max_output_bytes > (std::uint64_t{1} << 32)) {
    return "--max-output-bytes must be in 1024..4294967296";
  }
  if (config.lines_per_turn < 1 || config.lines_per_turn > 1'000'000) return "--lines-per-turn must be in 1..1000000";
  return std::nullopt;
}

int run_cluster_server(const ClusterServerConfig& config) {
  ClusterServer server(config);
  return server.run();
}

}  // namespace lockstep
