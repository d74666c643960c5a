#include "sim/simple/world.hpp"

#include <cmath>

#include <fmt/format.h>

namespace lockstep::sim {

namespace {

// An event as the run's hash takes it: its kind's number, its client and
// its slot or hold (the fields every kind had when the hash was defined).
std::uint64_t event_word(const Event& e) {
  return std::visit(
      [&e](const auto& typed) {
        std::uint64_t client = 0, slot = 0;
        if constexpr (requires { typed.client; }) client = typed.client;
        if constexpr (requires { typed.slot; }) slot = typed.slot;
        if constexpr (requires { typed.hold; }) slot = typed.hold;
        return static_cast<std::uint64_t>(e.index()) | client << 8 | slot << 40;
      },
      e);
}

constexpr std::size_t events_max = std::size_t{1} << 22;
constexpr std::size_t in_flight_max = std::size_t{1} << 20;
constexpr DurationMs audit_period_ms{1000};

SimpleServerNode::Config server_config(const SimParams& params, const RunOptions& options) {
  SimpleServerNode::Config config;
  config.limits = params.limits;
  config.token_block = params.token_block;
  config.bug = params.bug;
  config.fault = params.server_fault;
  config.compare_with_model = options.compare_with_model;
  config.check_protocol = options.check_protocol;
  return config;
}

}  // namespace

World::World(const SimParams& params, const RunOptions& options)
    : params_(params),
      options_(options),
      workload_prng_(Prng(params.seed).fork(1)),
      network_prng_(Prng(params.seed).fork(2)),
      fault_prng_(Prng(params.seed).fork(3)),
      keys_(params.workload.keys, params.workload.key_shape, params.workload.zipf_exponent),
      queue_(events_max),
      upstream_pool_(in_flight_max),
      downstream_pool_(in_flight_max),
      server_(server_config(params, options), storage_, violations_),
      edge_(params.workload.keys, params.latency, violations_),
      clients_(params.workload.clients),
      end_(TimeMs{0} + params.duration_ms + drain_ms(params)) {
  key_names_.reserve(params.workload.keys);
  for (std::uint32_t key = 0; key < params.workload.keys; ++key) key_names_.push_back(key_wire_name(key));
}

RunResult World::run() {
  server_.start(now());
  for (std::uint32_t client = 0; client < clients_.size(); ++client) start_client(client);
  const double clients = static_cast<double>(clients_.size());
  schedule_fault(event::Drop{}, params_.faults.drops_per_client_hour * clients);
  schedule_fault(event::ClientCrash{}, params_.faults.crashes_per_client_hour * clients);
  schedule_fault(event::ServerCrash{}, params_.faults.restarts_per_hour);
  schedule(TimeMs{0} + audit_period_ms, event::Audit{});
  schedule(TimeMs{0} + params_.duration_ms, event::WorkloadEnd{});

  while (!queue_.empty() && queue_.next_time() <= end_ &&
         !(options_.stop_at_first_violation && violations_.any())) {
    const auto entry = queue_.pop();
    ++stats_.events;
    mix(static_cast<std::uint64_t>(entry.at.value));
    mix(event_word(entry.payload));
    try {
      dispatch(entry.payload);
    } catch (const std::exception& error) {
      violations_.add(now(), "invariant", error.what());
    }
    if (options_.progress && stats_.events % options_.progress_events == 0) options_.progress(now());
  }
  if (!violations_.any() || !options_.stop_at_first_violation) {
    try {
      final_checks();
    } catch (const std::exception& error) {
      violations_.add(end_, "invariant", error.what());
    }
  }
  stats_.engine = server_.totals();
  stats_.server_steps = server_.steps();
  stats_.simulated_until = violations_.any() && options_.stop_at_first_violation ? now() : end_;
  RunResult result;
  result.params = params_;
  result.stats = stats_;
  result.violation_count = violations_.count();
  result.violations = violations_.items();
  result.violations_by_checker = violations_.by_checker();
  result.event_hash = hash_;
  result.inputs = std::move(inputs_);
  return result;
}

void World::schedule(TimeMs at, Event event) { queue_.push(at, event); }

void World::dispatch(const Event& e) {
  std::visit([this](const auto& typed) { handle(typed); }, e);
}

Client& World::client_at(std::uint32_t index) {
  LOCKSTEP_ASSERT(index < clients_.size());
  return clients_[index];
}

void World::handle(const event::SlotWake& e) {
  const Client& client = client_at(e.client);
  if (client.alive && e.link == client.link) on_slot_wake(e.client, e.slot);
}

void World::handle(const event::ReleaseDue& e) {
  const Client& client = client_at(e.client);
  if (client.alive && e.life == client.life) on_release_due(e.client, e.hold);
}

void World::handle(const event::ToServer& e) { deliver_to_server(upstream_pool_.take(e.message)); }

void World::handle(const event::ToClient& e) { deliver_to_client(downstream_pool_.take(e.message)); }

void World::handle(const event::ServerTick&) {
  if (tick_armed_at_ && *tick_armed_at_ <= now()) tick_armed_at_.reset();
  tick_server_to(now());
  arm_server_tick();
}

void World::handle(const event::Drop&) {
  if (draining_) return;
  if (const auto c = static_cast<std::uint32_t>(fault_prng_.below(clients_.size()));
      clients_[c].alive && clients_[c].connection) {
    on_drop(c);
  }
  schedule_fault(event::Drop{}, params_.faults.drops_per_client_hour * static_cast<double>(clients_.size()));
}

void World::handle(const event::ClientCrash&) {
  if (draining_) return;
  if (const auto c = static_cast<std::uint32_t>(fault_prng_.below(clients_.size())); clients_[c].alive) {
    on_crash(c);
  }
  schedule_fault(event::ClientCrash{}, params_.faults.crashes_per_client_hour * static_cast<double>(clients_.size()));
}

void World::handle(const event::ClientRevive& e) {
  if (e.life == client_at(e.client).life) on_revive(e.client);
}

void World::handle(const event::Reconnect& e) {
  const Client& client = client_at(e.client);
  if (client.alive && !client.connection && e.link == client.link) connect(e.client);
}

void World::handle(const event::ResetNotice& e) {
  Client& client = client_at(e.client);
  if (!client.connection || *client.connection != e.connection) return;
  notify_world(WorldEvent::reset, e.client, *client.connection);
  close_client_side(e.client);
  schedule(now() + DurationMs{fault_prng_.between(params_.faults.reconnect_min_ms.value,
                                                  params_.faults.reconnect_max_ms.value)},
           event::Reconnect{e.client, client.link});
}

void World::handle(const event::ServerCrash&) {
  if (draining_) return;
  if (server_.up()) on_server_crash();
  schedule_fault(event::ServerCrash{}, params_.faults.restarts_per_hour);
}

void World::handle(const event::ServerUp&) { on_server_up(); }

void World::handle(const event::Audit&) {
  edge_.audit(now());
  if (now() + audit_period_ms <= end_) schedule(now() + audit_period_ms, event::Audit{});
}

void World::handle(const event::WorkloadEnd&) { draining_ = true; }

// ---- network ---------------------------------------------------------------

void World::send_upstream(std::uint32_t client, Upstream message) {
  ConnectionEnds& ends = connections_[message.connection.value - 1];
  LOCKSTEP_ASSERT(ends.client == client);
  if (!message.close) {
    ++stats_.requests_sent;
    notify_world(WorldEvent::send, client, message.connection, message.line);
  }
  const TimeMs at = ends.upstream.delivery_time(now(), params_.latency.sample(network_prng_));
  schedule(at, event::ToServer{client, upstream_pool_.put(std::move(message))});
}

void World::send_downstream(const Outputs& out, std::size_t first) {
  for (std::size_t i = first; i < out.size(); ++i) {
    const Outbound& o = out[i];
    mix(o.connection.value);
    mix(o.response.token.value ^ static_cast<std::uint64_t>(o.response.kind));
    mix(o.response.key);
    mix(o.response.owner);
    // The server's judges already reported a response to a closed
    // connection; the network has nowhere to carry it.
    if (!server_.is_open(o.connection)) continue;
    ConnectionEnds& ends = connections_[o.connection.value - 1];
    const TimeMs at = ends.downstream.delivery_time(now(), params_.latency.sample(network_prng_));
    const auto index = downstream_pool_.put(Downstream{o.connection, o.response, server_.incarnation()});
    schedule(at, event::ToClient{ends.client, index});
  }
}

void World::deliver_to_server(Upstream message) {
  if (!server_.up() || !server_.is_open(message.connection)) {
    if (!message.close) {
      ++stats_.lost_messages;
      notify_world(WorldEvent::lost, connections_[message.connection.value - 1].client,
                   message.connection, message.line);
    }
    return;
  }
  tick_server_to(now());
  out_.clear();
  if (message.close) {
    if (options_.record_inputs) {
      inputs_.push_back({InputRecord::Kind::close, now(), message.connection, {}, 0, 0});
    }
    server_.close(message.connection, now(), out_);
    notify_step(ServerAction::close, message.connection, {}, out_, 0);
  } else {
    server_.line(message.connection, message.line, now(), out_);
    const auto action = message.line[0] == 'A' ? ServerAction::acquire : ServerAction::release;
    notify_step(action, message.connection, message.line, out_, 0);
    if (options_.record_inputs) {
      inputs_.push_back({InputRecord::Kind::line, now(), message.connection, std::move(message.line),
                         message.request, message.release_of});
    }
  }
  send_downstream(out_, 0);
  arm_server_tick();
}

void World::deliver_to_client(Downstream message) {
  ConnectionEnds& ends = connections_[message.connection.value - 1];
  // Sent before the server learned that the client had gone: TCP drops it.
  if (!ends.client_open) return;
  ++stats_.responses_received;
  const std::string line = options_.observers.empty() ? std::string() : format_response(message.response);
  notify_world(WorldEvent::receive, ends.client, message.connection, line);
  const auto answer = edge_.received(now(), message.connection, message.response, message.incarnation);
  if (answer) on_answer(ends.client, *answer);
}

// ---- the server --------------------------------------------------------------

void World::tick_server_to(TimeMs at) {
  if (!server_.up()) return;
  const auto due = server_.next_due();
  if (!due || *due > at) return;
  out_.clear();
  server_.tick(at, out_);
  notify_step(ServerAction::tick, {}, {}, out_, 0);
  send_downstream(out_, 0);
}

void World::arm_server_tick() {
  const auto due = server_.next_due();
  if (!due || *due > end_) return;
  if (tick_armed_at_ && *tick_armed_at_ <= *due) return;
  tick_armed_at_ = *due;
  schedule(std::max(*due, now()), event::ServerTick{});
}

void World::on_server_crash() {
  server_.crash();
  tick_armed_at_.reset();
  ++stats_.restarts;
  notify_world(WorldEvent::server_down, 0, {});
  if (options_.record_inputs) inputs_.push_back({InputRecord::Kind::restart, now(), {}, {}, 0, 0});
  // Every connection dies with the process; each client learns of it when
  // its reset crosses the network.
  for (std::uint32_t c = 0; c < clients_.size(); ++c) {
    if (!clients_[c].connection) continue;
    schedule(now() + params_.latency.sample(network_prng_),
             event::ResetNotice{c, *clients_[c].connection});
  }
  schedule(now() + DurationMs{fault_prng_.between(params_.faults.server_down_min_ms.value,
                                                  params_.faults.server_down_max_ms.value)},
           event::ServerUp{});
}

void World::on_server_up() {
  server_.start(now());
  out_.clear();
  notify_step(ServerAction::restart, {}, {}, out_, 0);
  arm_server_tick();
}

void World::on_drop(std::uint32_t client) {
  const ConnectionId connection = *clients_[client].connection;
  ++stats_.drops;
  notify_world(WorldEvent::drop, client, connection);
  close_client_side(client);
  send_upstream(client, Upstream{connection, true, {}, 0, 0});
  schedule(now() + DurationMs{fault_prng_.between(params_.faults.reconnect_min_ms.value,
                                                  params_.faults.reconnect_max_ms.value)},
           event::Reconnect{client, clients_[client].link});
}

void World::schedule_fault(Event fault, double per_hour) {
  if (per_hour <= 0) return;
  const double mean_ms = 3'600'000.0 / per_hour;
  const double delay = -mean_ms * std::log(1.0 - fault_prng_.unit());
  const TimeMs at = now() + DurationMs{1 + static_cast<std::int64_t>(std::min(delay, 1e12))};
  if (at < TimeMs{0} + params_.duration_ms) schedule(at, fault);
}

void World::final_checks() {
  tick_server_to(end_);
  edge_.finish(end_);
  if (server_.up()) {
    server_.check_invariants();
    const Engine& engine = server_.engine();
    if (engine.key_count() != 0 || engine.waiter_count() != 0) {
      violations_.add(end_, "drain",
                      fmt::format("{} keys and {} waiters still registered after the drain, when "
                                  "every wait and lease had ended and a sweep had run",
                                  engine.key_count(), engine.waiter_count()));
    }
  }
}

// ---- observation -------------------------------------------------------------

void World::notify_step(ServerAction action, ConnectionId connection, std::string_view line,
                        const Outputs& out, std::size_t first) {
  if (options_.observers.empty()) return;
  const ServerStep step{now(), action, connection, line, out, first};
  for (Observer* observer : options_.observers) observer->server_step(step, server_);
}

void World::notify_world(WorldEvent event, std::uint32_t client, ConnectionId connection,
                         std::string_view line) {
  for (Observer* observer : options_.observers) observer->world(now(), event, client, connection, line);
}

void World::mix(std::uint64_t value) {
  hash_ ^= value;
  hash_ *= 0x100000001b3ULL;
  hash_ ^= hash_ >> 29;
}

void World::mix(std::string_view text) {
  for (const char c : text) {
    hash_ ^= static_cast<unsigned char>(c);
    hash_ *= 0x100000001b3ULL;
  }
}

RunResult run_simulation(const SimParams& params, const RunOptions& options) {
  return World(params, options).run();
}

}  // namespace lockstep::sim
