#include "sim/simple/params.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

namespace lockstep::sim {

namespace {

// Log-uniform in [low, high]: as many short as long durations per decade.
std::int64_t log_uniform(Prng& prng, std::int64_t low, std::int64_t high) {
  const double a = std::log(static_cast<double>(low));
  const double b = std::log(static_cast<double>(high));
  const auto value = static_cast<std::int64_t>(std::exp(a + (b - a) * prng.unit()));
  return std::clamp(value, low, high);
}

}  // namespace

SimParams default_params(std::uint64_t seed) {
  SimParams params;
  params.seed = seed;
  params.limits.max_keys = 100'000;
  params.limits.max_waiters_per_key = 16;
  params.limits.max_waiters = 10'000;
  params.limits.max_lease_ms = DurationMs{60'000};
  params.limits.max_wait_ms = DurationMs{60'000};
  return params;
}

SimParams swarm_params(std::uint64_t seed) {
  SimParams params = default_params(seed);
  // A stream of its own, so the run's other streams start as with --seed.
  Prng prng = Prng(seed ^ 0x5157a5eedULL).fork(1);
  Workload& w = params.workload;
  w.clients = static_cast<std::uint32_t>(log_uniform(prng, 1, 100));
  w.keys = static_cast<std::uint32_t>(log_uniform(prng, 1, 1000));
  w.key_shape = prng.chance(0.5) ? KeyShape::zipf : KeyShape::uniform;
  w.zipf_exponent = 0.5 + prng.unit();
  w.owners_per_client = static_cast<std::uint32_t>(prng.between(1, 6));
  w.owner_pool = prng.chance(0.3) ? static_cast<std::uint32_t>(prng.between(1, 8)) : 0;
  w.lease_min_ms = DurationMs{log_uniform(prng, 1, 200)};
  w.lease_max_ms = DurationMs{log_uniform(prng, w.lease_min_ms.value, 10'000)};
  w.wait_min_ms = DurationMs{log_uniform(prng, 1, 100)};
  w.wait_max_ms = DurationMs{log_uniform(prng, w.wait_min_ms.value, 10'000)};
  w.try_lock_share = prng.chance(0.2) ? 0.0 : prng.unit() * 0.8;
  w.think_mean_ms = DurationMs{log_uniform(prng, 5, 3000)};
  w.overstay_share = prng.unit() * 0.2;
  w.forget_share = prng.unit() * 0.1;
  w.stale_release_share = prng.unit() * 0.1;

  params.latency.min_ms = DurationMs{prng.between(0, 5)};
  params.latency.max_ms = DurationMs{params.latency.min_ms.value + log_uniform(prng, 1, 200)};
  params.latency.shape = prng.chance(0.5) ? LatencyShape::uniform : LatencyShape::long_tail;

  Faults& f = params.faults;
  f.drops_per_client_hour = prng.chance(0.3) ? 0.0 : log_uniform(prng, 1, 600);
  f.crashes_per_client_hour = prng.chance(0.3) ? 0.0 : log_uniform(prng, 1, 300);
  f.restarts_per_hour = prng.chance(0.4) ? 0.0 : log_uniform(prng, 10, 2000);

  Limits& l = params.limits;
  l.sweep_ms = DurationMs{log_uniform(prng, 10, 5000)};
  l.max_keys = prng.chance(0.3) ? static_cast<std::uint64_t>(log_uniform(prng, 1, 64)) : 100'000;
  l.max_waiters_per_key = static_cast<std::uint64_t>(log_uniform(prng, 1, 32));
  l.max_waiters = prng.chance(0.3) ? static_cast<std::uint64_t>(log_uniform(prng, 1, 64)) : 10'000;
  params.token_block = static_cast<std::uint64_t>(log_uniform(prng, 1, 1024));
  params.duration_ms = DurationMs{log_uniform(prng, 2'000, 30'000)};
  return params;
}

DurationMs drain_ms(const SimParams& params) {
  const auto& w = params.workload;
  return DurationMs{w.lease_max_ms.value + w.wait_max_ms.value + 2 * params.limits.sweep_ms.value +
                    4 * params.latency.max_ms.value +
                    params.faults.server_down_max_ms.value + 10};
}

std::string describe(const SimParams& p) {
  const auto& w = p.workload;
  return fmt::format(
      "seed={} clients={} keys={} {}{} owners={} pool={} lease={}..{} wait={}..{} try={:.2f} "
      "think={} latency={}..{} {} drops/h={:.0f} crashes/h={:.0f} restarts/h={:.0f} sweep_ms={} "
      "max_keys={} max_waiters_per_key={} max_waiters={} token_block={} duration_ms={}",
      p.seed, w.clients, w.keys, w.key_shape == KeyShape::zipf ? "zipf" : "uniform",
      w.key_shape == KeyShape::zipf ? fmt::format("({:.2f})", w.zipf_exponent) : "",
      w.owners_per_client, w.owner_pool, w.lease_min_ms.value, w.lease_max_ms.value,
      w.wait_min_ms.value, w.wait_max_ms.value, w.try_lock_share, w.think_mean_ms.value,
      p.latency.min_ms.value, p.latency.max_ms.value,
      p.latency.shape == LatencyShape::uniform ? "uniform" : "long-tail",
      p.faults.drops_per_client_hour, p.faults.crashes_per_client_hour, p.faults.restarts_per_hour,
      p.limits.sweep_ms.value, p.limits.max_keys, p.limits.max_waiters_per_key,
      p.limits.max_waiters, p.token_block, p.duration_ms.value);
}

namespace {

constexpr std::array server_faults{
    ServerFaultDescription{ServerFault::restart_forgets_tokens, "restart-forgets-tokens",
                           "a restarted server starts its tokens at 1 again", "granted twice"},
};

}  // namespace

std::span<const ServerFaultDescription> server_fault_catalogue() { return server_faults; }

std::optional<ServerFault> server_fault_from_name(const std::string& name) {
  for (const auto& entry : server_faults) {
    if (entry.name == name) return entry.fault;
  }
  return std::nullopt;
}

std::string server_fault_name(ServerFault fault) {
  for (const auto& entry : server_faults) {
    if (entry.fault == fault) return std::string(entry.name);
  }
  return "none";
}

KeyChooser::KeyChooser(std::uint32_t keys, KeyShape shape, double exponent) : keys_(keys) {
  LOCKSTEP_ASSERT(keys > 0);
  if (shape == KeyShape::uniform) return;
  cumulative_.reserve(keys);
  double total = 0;
  for (std::uint32_t rank = 1; rank <= keys; ++rank) {
    total += 1.0 / std::pow(static_cast<double>(rank), exponent);
    cumulative_.push_back(total);
  }
  for (auto& value : cumulative_) value /= total;
}

std::uint32_t KeyChooser::pick(Prng& prng) const {
  if (cumulative_.empty()) return static_cast<std::uint32_t>(prng.below(keys_));
  const double u = prng.unit();
  const auto found = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
  const auto index = static_cast<std::uint32_t>(found - cumulative_.begin());
  return std::min(index, keys_ - 1);
}

}  // namespace lockstep::sim
