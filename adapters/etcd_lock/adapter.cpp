#include "adapters/etcd_lock/adapter.hpp"

#include <atomic>
#include <memory>

#include <fmt/format.h>

#include "adapters/etcd_lock/etcd_mutex.hpp"
#include "drivers/etcd/client.hpp"
#include "drivers/etcd/log_format.hpp"

namespace lockstep::etcd_lock {

namespace {

class EtcdService : public adapters::LockService {
 public:
  explicit EtcdService(const AdapterConfig& config) : config_(config) {}

  std::optional<std::string> start() override {
    std::string error;
    const auto target = etcd::parse_endpoints(config_.etcd_endpoints, error);
    client_ = std::make_unique<etcd::Client>(*target);
    const std::chrono::milliseconds timeout{config_.etcd_timeout_ms};
    mutex_ = std::make_unique<EtcdMutex>(*client_, MutexConfig{config_.prefix, timeout, std::chrono::milliseconds{100}},
                                         stopping_);
    etcdserverpb::LeaseGrantResponse probe;
    const auto status = client_->lease_grant(1, probe, timeout);
    if (!status.ok()) {
      return fmt::format("etcd at {} did not answer within {} ms: {}", config_.etcd_endpoints, config_.etcd_timeout_ms,
                         etcd::describe(status));
    }
    minimum_ttl_s_ = probe.ttl();
    [[maybe_unused]] const auto revoked = client_->lease_revoke(probe.id(), timeout);
    return std::nullopt;
  }
  std::string describe() const override {
    return fmt::format("etcd {} prefix '{}'; leases in whole seconds, etcd's minimum TTL {} s", config_.etcd_endpoints,
                       config_.prefix, minimum_ttl_s_);
  }
  adapters::AcquireOutcome acquire(const adapters::AcquireAsk& ask, adapters::WaiterSlots& slots,
                                   adapters::Cancellation& cancel, const std::function<void()>& placed) override {
    return mutex_->acquire(ask, slots, cancel, placed);
  }
  adapters::ReleaseOutcome release(const std::string& key, std::uint64_t token) override {
    // A token past the revisions etcd can have names no grant of etcd's.
    if (token > static_cast<std::uint64_t>(INT64_MAX)) return {adapters::ReleaseOutcome::Kind::not_held};
    return mutex_->release(key, static_cast<std::int64_t>(token));
  }
  void stop() override { stopping_ = true; }
  std::string figures() const override {
    return fmt::format("{} etcd calls made again", mutex_ ? mutex_->calls_retried() : 0);
  }

 private:
  const AdapterConfig& config_;
  std::unique_ptr<etcd::Client> client_;
  std::unique_ptr<EtcdMutex> mutex_;
  std::atomic<bool> stopping_{false};
  std::int64_t minimum_ttl_s_ = 0;
};

}  // namespace

std::optional<std::string> validate(const AdapterConfig& config) {
  if (auto error = adapters::validate(config.server)) return error;
  std::string error;
  if (config.etcd_endpoints.empty()) return "--etcd is required: the endpoints of etcd, host:port[,host:port...]";
  if (!etcd::parse_endpoints(config.etcd_endpoints, error)) return "--etcd: " + error;
  if (!etcd::valid_prefix(config.prefix, error)) return "--prefix: " + error;
  if (config.etcd_timeout_ms < 100 || config.etcd_timeout_ms > 600'000) return "--etcd-timeout-ms must be in 100..600000";
  return std::nullopt;
}

int run_adapter(const AdapterConfig& config) {
  if (auto error = validate(config)) {
    fmt::print(stderr, "lockstep-etcd-lock: {}\n", *error);
    return 2;
  }
  EtcdService service(config);
  return adapters::run_line_adapter("lockstep-etcd-lock", config.server, service);
}

}  // namespace lockstep::etcd_lock
