#include "live/cluster_workload.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace lockstep::live {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

void record_result(ClusterOperation& op, const client::ClusterClient::Result& result, Clock::time_point epoch) {
  const auto micros = [&](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t - epoch).count();
  };
  op.sent_us = micros(result.first_sent);
  op.attempts = result.attempts;
  if (result.kind != client::ClusterClient::Result::Kind::answered) return;
  op.answered_us = micros(result.finished);
  op.response = result.response;
}

struct ClusterWorkload::Client {
  std::unique_ptr<client::ClusterClient> connection;
  std::string name;
  bool busy = false;                    // a request is queued or on the wire
  Clock::time_point next_act{};         // when to act next (think, hold)
  struct Held {
    std::string key;
    Token token;
    bool release = true;
  };
  std::optional<Held> held;
};

ClusterWorkload::ClusterWorkload(std::vector<client::NodeAddress> nodes, ClusterWorkloadOptions options)
    : options_(options), epoch_(Clock::now()), prng_(options.seed) {
  for (int i = 0; i < options_.clients; ++i) {
    auto c = std::make_unique<Client>();
    c->name = fmt::format("w{}-{}", options_.seed, i);
    client::ClusterClient::Options o;
    o.nodes = nodes;
    o.client_id = c->name;
    o.answer_timeout = options_.answer_timeout;
    o.patience = options_.patience;
    if (options_.wire) o.on_wire = options_.wire(i);
    c->connection = std::make_unique<client::ClusterClient>(o);
    c->next_act = epoch_ + milliseconds{prng_.between(0, options_.think_max_ms)};
    clients_.push_back(std::move(c));
  }
}

ClusterWorkload::~ClusterWorkload() = default;

std::int64_t ClusterWorkload::now_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - epoch_).count();
}

void ClusterWorkload::act(Client& c) {
  // The record of a request, filled in when its result comes.
  const auto record = [&](ClusterOperation op) {
    const auto index = operations_.size();
    operations_.push_back(std::move(op));
    return index;
  };
  if (c.held && c.held->release) {
    ClusterOperation op;
    op.client = c.name;
    op.acquire = false;
    op.key = c.held->key;
    op.token = c.held->token;
    const auto index = record(op);
    c.busy = true;
    op.sequence = c.connection->release(op.key, op.token, [this, &c, index](const auto& result) {
      record_result(operations_[index], result, epoch_);
      c.busy = false;
      c.held.reset();
      c.next_act = Clock::now() + milliseconds{prng_.between(0, options_.think_max_ms)};
    });
    operations_[index].sequence = op.sequence;
    return;
  }
  c.held.reset();  // a lease let run out is forgotten
  ClusterOperation op;
  op.client = c.name;
  op.owner = c.name;
  op.key = fmt::format("k{}", prng_.between(0, options_.keys - 1));
  op.lease_ms = DurationMs{prng_.between(options_.lease_min_ms, options_.lease_max_ms)};
  const bool try_lock = options_.wait_min_ms == 0 && (options_.wait_max_ms == 0 || prng_.chance(options_.try_lock));
  op.wait_ms = DurationMs{try_lock ? 0
                                   : prng_.between(std::max<std::int64_t>(1, options_.wait_min_ms), options_.wait_max_ms)};
  const auto index = record(op);
  c.busy = true;
  const auto sequence = c.connection->acquire(
      op.key, op.owner, op.lease_ms.value, op.wait_ms.value, [this, &c, index](const auto& result) {
        auto& done = operations_[index];
        record_result(done, result, epoch_);
        c.busy = false;
        c.next_act = Clock::now() + milliseconds{prng_.between(0, options_.think_max_ms)};
        if (result.kind != client::ClusterClient::Result::Kind::answered) return;
        if (result.response.kind != ResponseKind::granted) return;
        // Hold: release early, just before the lease ends, or never. A
        // holder counts its lease from its first send (it cannot know when
        // the grant was applied); the cluster counts it from the grant,
        // applied a little before the A arrived.
        Client::Held held{done.key, result.response.token, !prng_.chance(options_.let_expire)};
        const auto lease_end = result.first_sent + milliseconds{done.lease_ms.value};
        if (held.release && prng_.chance(options_.release_late)) {
          c.next_act = result.finished + milliseconds{done.lease_ms.value} -
                       milliseconds{prng_.between(0, options_.release_late_max_ms)};
        } else if (held.release) {
          const auto left = std::max<std::int64_t>(
              0, std::chrono::duration_cast<milliseconds>(lease_end - Clock::now()).count() / 2);
          c.next_act = Clock::now() + milliseconds{prng_.between(0, left)};
        } else {
          c.next_act = lease_end;
        }
        c.held = held;
      });
  operations_[index].sequence = sequence;
}

void ClusterWorkload::poll_once(milliseconds timeout) {
  const auto now = Clock::now();
  auto wake = now + timeout;
  for (auto& c : clients_) {
    if (c->busy) continue;
    if (c->held && !c->held->release && now >= c->next_act) c->held.reset();
    if (stopping_) continue;
    if (now >= c->next_act) {
      act(*c);
    } else {
      wake = std::min(wake, c->next_act);
    }
  }
  std::vector<client::ClusterClient*> all;
  for (auto& c : clients_) all.push_back(c->connection.get());
  const auto asked = std::max(milliseconds{0}, std::chrono::ceil<milliseconds>(wake - Clock::now()));
  const auto due = Clock::now() + asked;
  client::ClusterClient::poll_many(all, asked);
  const auto late = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - due).count();
  stall_us_ = std::max<std::int64_t>(stall_us_, late);
}

void ClusterWorkload::run_for(milliseconds duration) {
  const auto until = Clock::now() + duration;
  while (Clock::now() < until) poll_once(std::min(milliseconds{10}, std::chrono::ceil<milliseconds>(until - Clock::now())));
}

bool ClusterWorkload::drain(milliseconds patience) {
  stopping_ = true;
  const auto until = Clock::now() + patience;
  while (Clock::now() < until) {
    if (std::none_of(clients_.begin(), clients_.end(), [](const auto& c) { return c->busy; })) return true;
    poll_once(milliseconds{10});
  }
  return false;
}

std::vector<std::string> ClusterWorkload::unexpected() const {
  std::vector<std::string> all;
  for (const auto& c : clients_) {
    for (const auto& line : c->connection->unexpected()) all.push_back(c->name + ": " + line);
  }
  return all;
}

std::uint64_t ClusterWorkload::grants_since(std::int64_t since_us) const {
  return static_cast<std::uint64_t>(std::count_if(operations_.begin(), operations_.end(), [&](const auto& op) {
    return op.acquire && op.answered_us && *op.answered_us >= since_us && op.response->kind == ResponseKind::granted;
  }));
}

client::ClusterClient::Stats ClusterWorkload::stats() const {
  client::ClusterClient::Stats total;
  for (const auto& c : clients_) {
    add_counters(total, c->connection->stats(), client::cluster_client_counters);
  }
  return total;
}

}  // namespace lockstep::live
