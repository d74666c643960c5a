#include "live/etcd_load.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "drivers/etcd/client.hpp"
#include "impl/prng.hpp"

namespace lockstep::live {

namespace {

using Clock = std::chrono::steady_clock;

struct Worker {
  std::vector<std::uint32_t> latencies_us;
  std::uint64_t grants = 0;
  std::string error;
};

void work(const EtcdLoadConfig& config, const etcd::Target& target, int index, Clock::time_point start,
          Clock::time_point stop_at, Worker& worker) {
  etcd::Client client(target);
  SplitMix64 prng(config.seed * 1'000'003 + static_cast<std::uint64_t>(index));
  const std::string owner = fmt::format("caller-{}", index);
  std::this_thread::sleep_until(start);
  const auto timed = [&](const etcdserverpb::TxnRequest& txn, etcdserverpb::TxnResponse& response) {
    const auto sent = Clock::now();
    const auto status = client.txn(txn, response, config.call_timeout);
    if (!status.ok()) {
      worker.error = etcd::describe(status);
      return false;
    }
    worker.latencies_us.push_back(static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - sent).count()));
    return true;
  };
  while (Clock::now() < stop_at) {
    const auto key = fmt::format("{}key:{}", config.prefix, prng.below(static_cast<std::uint64_t>(config.keys)));
    etcdserverpb::TxnRequest lock;
    auto* vacant = lock.add_compare();
    vacant->set_key(key);
    vacant->set_target(etcdserverpb::Compare::CREATE);
    vacant->set_result(etcdserverpb::Compare::EQUAL);
    vacant->set_create_revision(0);
    auto* put = lock.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(owner);
    etcdserverpb::TxnResponse locked;
    if (!timed(lock, locked)) return;
    if (!locked.succeeded()) continue;
    ++worker.grants;
    if (Clock::now() >= stop_at) return;
    etcdserverpb::TxnRequest unlock;
    auto* mine = unlock.add_compare();
    mine->set_key(key);
    mine->set_target(etcdserverpb::Compare::VALUE);
    mine->set_result(etcdserverpb::Compare::EQUAL);
    mine->set_value(owner);
    unlock.add_success()->mutable_request_delete_range()->set_key(key);
    etcdserverpb::TxnResponse unlocked;
    if (!timed(unlock, unlocked)) return;
  }
}

}  // namespace

LoadResult run_etcd_load(const EtcdLoadConfig& config) {
  LoadResult result;
  std::string error;
  const auto target = etcd::parse_endpoints(config.endpoints, error);
  if (!target) {
    result.error = error;
    return result;
  }
  std::vector<Worker> workers(static_cast<std::size_t>(config.concurrency));
  // Every caller connects first; the clock starts together for all.
  const auto start = Clock::now() + std::chrono::milliseconds{500};
  const auto stop_at = start + config.duration;
  std::vector<std::thread> threads;
  for (int i = 0; i < config.concurrency; ++i) {
    threads.emplace_back(work, std::cref(config), std::cref(*target), i, start, stop_at,
                         std::ref(workers[static_cast<std::size_t>(i)]));
  }
  for (auto& thread : threads) thread.join();
  result.seconds = std::chrono::duration<double>(std::max(Clock::now(), stop_at) - start).count();
  std::vector<std::uint32_t> latencies;
  for (auto& worker : workers) {
    if (!worker.error.empty() && result.error.empty()) result.error = "etcd: " + worker.error;
    result.grants += worker.grants;
    latencies.insert(latencies.end(), worker.latencies_us.begin(), worker.latencies_us.end());
  }
  result.operations = latencies.size();
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    const auto at = [&](double q) {
      return static_cast<double>(
          latencies[std::min(latencies.size() - 1, static_cast<std::size_t>(q * static_cast<double>(latencies.size())))]);
    };
    result.p50_us = at(0.50);
    result.p99_us = at(0.99);
    result.p999_us = at(0.999);
  }
  return result;
}

}  // namespace lockstep::live
