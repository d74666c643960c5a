// What the simulated clients do. Each client is a process with one
// connection at a time and a few owners that share it: every owner runs its
// own loop (think, acquire, hold, release), so requests of several owners
// are in flight on one connection and their answers come back in whatever
// order the server sends them. A client matches an answer to its request
// through the clients' checker (client_edge.hpp), which is the one place
// that knows what is in flight.
#include <algorithm>
#include <cmath>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "sim/simple/world.hpp"

namespace lockstep::sim {

namespace {

constexpr std::size_t holds_per_owner = 4;
constexpr std::size_t released_kept = 8;
constexpr double reacquire_share = 0.05;  // an owner asks again for a key it holds
constexpr DurationMs release_retry_ms{100};

std::int64_t log_uniform(Prng& prng, std::int64_t low, std::int64_t high) {
  if (low >= high) return low;
  const double a = std::log(static_cast<double>(std::max<std::int64_t>(low, 1)));
  const double b = std::log(static_cast<double>(high));
  return std::clamp(static_cast<std::int64_t>(std::exp(a + (b - a) * prng.unit())), low, high);
}

}  // namespace

void World::start_client(std::uint32_t c) {
  Client& client = clients_[c];
  const Workload& w = params_.workload;
  if (w.owner_pool > 0) {
    // Owner names shared between clients: the same owner may ask from
    // several connections at once (simple mode 9: no special treatment).
    std::vector<std::uint32_t> pool(w.owner_pool);
    for (std::uint32_t i = 0; i < w.owner_pool; ++i) pool[i] = i;
    const auto count = std::min(w.owners_per_client, w.owner_pool);
    for (std::uint32_t s = 0; s < count; ++s) {
      const auto pick = s + static_cast<std::uint32_t>(workload_prng_.below(w.owner_pool - s));
      std::swap(pool[s], pool[pick]);
      client.slots.push_back(OwnerSlot{pool[s], owner_wire_name(pool[s]), false, 0});
    }
  } else {
    for (std::uint32_t s = 0; s < w.owners_per_client; ++s) {
      const std::uint32_t owner = 100 + c * w.owners_per_client + s;
      client.slots.push_back(OwnerSlot{owner, owner_wire_name(owner), false, 0});
    }
  }
  client.holds.resize(client.slots.size() * holds_per_owner);
  connect(c);
}

void World::connect(std::uint32_t c) {
  Client& client = clients_[c];
  if (!server_.up()) {
    schedule(now() + DurationMs{fault_prng_.between(params_.faults.reconnect_min_ms.value,
                                                    params_.faults.reconnect_max_ms.value)},
             event::Reconnect{c, client.link});
    return;
  }
  const ConnectionId connection{connections_.size() + 1};
  connections_.push_back(ConnectionEnds{c, true, {}, {}});
  server_.accept(connection);
  edge_.opened(connection);
  client.connection = connection;
  ++stats_.connections;
  notify_world(WorldEvent::connect, c, connection);
  for (std::uint32_t s = 0; s < client.slots.size(); ++s) wake_slot_later(c, s);
}

void World::close_client_side(std::uint32_t c) {
  Client& client = clients_[c];
  const ConnectionId connection = *client.connection;
  connections_[connection.value - 1].client_open = false;
  edge_.closed(connection);
  client.connection.reset();
  ++client.link;
  for (auto& slot : client.slots) slot.in_flight = false;
}

DurationMs World::think_time() {
  const double mean = static_cast<double>(params_.workload.think_mean_ms.value);
  return DurationMs{static_cast<std::int64_t>(-mean * std::log(1.0 - workload_prng_.unit()))};
}

void World::wake_slot_later(std::uint32_t c, std::uint32_t s) {
  schedule(now() + think_time(), event::SlotWake{c, s, clients_[c].link});
}

void World::on_slot_wake(std::uint32_t c, std::uint32_t s) {
  Client& client = clients_[c];
  OwnerSlot& slot = client.slots[s];
  if (!client.connection || !sending() || slot.in_flight) return;
  const Workload& w = params_.workload;
  std::uint32_t key = keys_.pick(workload_prng_);
  if (workload_prng_.chance(reacquire_share)) {
    for (const auto& hold : client.holds) {
      if (hold.live && hold.owner == slot.owner) key = hold.key;
    }
  }
  const DurationMs lease{log_uniform(workload_prng_, w.lease_min_ms.value, w.lease_max_ms.value)};
  const DurationMs wait{workload_prng_.chance(w.try_lock_share)
                            ? 0
                            : log_uniform(workload_prng_, w.wait_min_ms.value, w.wait_max_ms.value)};
  const RequestId id = next_request_++;
  Upstream message{*client.connection, false, {}, id, 0};
  message.line = fmt::format(FMT_COMPILE("A {} {} {} {}"), key_names_[key], slot.owner_name, lease.value, wait.value);
  edge_.sent_acquire(now(), id, *client.connection, key, slot.owner, lease, wait);
  slot.in_flight = true;
  slot.request = id;
  send_upstream(c, std::move(message));
}

DurationMs World::hold_time(TimeMs sent_at, DurationMs lease_ms) {
  const Workload& w = params_.workload;
  if (workload_prng_.chance(w.overstay_share)) {
    // Past the lease: the release finds the key expired, taken over or swept.
    const TimeMs at = sent_at + lease_ms + DurationMs{workload_prng_.between(0, lease_ms.value)};
    return std::max(DurationMs{1}, at - now());
  }
  const auto remaining = (sent_at + lease_ms - now()).value;
  if (remaining <= 1) return DurationMs{1};
  return DurationMs{static_cast<std::int64_t>(workload_prng_.unit() * 0.9 * static_cast<double>(remaining))};
}

void World::on_answer(std::uint32_t c, const Answer& answer) {
  Client& client = clients_[c];
  if (answer.kind == ResponseKind::released || answer.kind == ResponseKind::not_held) return;
  const auto slot = std::find_if(client.slots.begin(), client.slots.end(),
                                 [&](const OwnerSlot& s) { return s.in_flight && s.request == answer.request; });
  LOCKSTEP_ASSERT(slot != client.slots.end());
  slot->in_flight = false;
  wake_slot_later(c, static_cast<std::uint32_t>(slot - client.slots.begin()));
  if (answer.kind != ResponseKind::granted) return;
  if (workload_prng_.chance(params_.workload.forget_share)) return;  // never released
  const auto free = std::find_if(client.holds.begin(), client.holds.end(), [](const Hold& h) { return !h.live; });
  if (free == client.holds.end()) return;  // too much held: let this one expire
  *free = Hold{answer.key, answer.token, answer.request, answer.owner, true};
  schedule(now() + hold_time(answer.sent_at, answer.lease_ms),
           event::ReleaseDue{c, static_cast<std::uint32_t>(free - client.holds.begin()), client.life});
}

void World::on_release_due(std::uint32_t c, std::uint32_t h) {
  Client& client = clients_[c];
  Hold& hold = client.holds[h];
  if (!hold.live || !sending()) return;
  if (!client.connection) {
    schedule(now() + release_retry_ms, event::ReleaseDue{c, h, client.life});
    return;
  }
  const RequestId id = next_request_++;
  Upstream message{*client.connection, false, {}, id, 0};
  if (!client.released.empty() && workload_prng_.chance(params_.workload.stale_release_share)) {
    // A token this client no longer holds: the answer must be N (or R, if
    // the server really still has it as the holder).
    const Hold& stale = client.released[workload_prng_.below(client.released.size())];
    message.line = fmt::format(FMT_COMPILE("R {} {}"), key_names_[stale.key], stale.token.value);
    message.release_of = stale.request;
    edge_.sent_release(now(), id, *client.connection, stale.key, stale.token);
    send_upstream(c, std::move(message));
    schedule(now() + DurationMs{workload_prng_.between(1, 50)}, event::ReleaseDue{c, h, client.life});
    return;
  }
  message.line = fmt::format(FMT_COMPILE("R {} {}"), key_names_[hold.key], hold.token.value);
  message.release_of = hold.request;
  edge_.sent_release(now(), id, *client.connection, hold.key, hold.token);
  hold.live = false;
  if (client.released.size() < released_kept) {
    client.released.push_back(hold);
  } else {
    client.released[client.released_next++ % released_kept] = hold;
  }
  send_upstream(c, std::move(message));
}

void World::on_crash(std::uint32_t c) {
  Client& client = clients_[c];
  ++stats_.crashes;
  notify_world(WorldEvent::crash, c, client.connection.value_or(ConnectionId{}));
  if (client.connection) {
    const ConnectionId connection = *client.connection;
    close_client_side(c);
    send_upstream(c, Upstream{connection, true, {}, 0, 0});
  }
  client.alive = false;
  ++client.life;
  ++client.link;
  for (auto& hold : client.holds) hold.live = false;  // held until they expire
  client.released.clear();
  schedule(now() + DurationMs{fault_prng_.between(100, 5000)},
           event::ClientRevive{c, client.life});
}

void World::on_revive(std::uint32_t c) {
  clients_[c].alive = true;
  notify_world(WorldEvent::revive, c, {});
  connect(c);
}

}  // namespace lockstep::sim
