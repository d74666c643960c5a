// `lockstep-etcd-lock`: the line server every adapter runs
// (adapters/common/line_adapter.hpp) in front of etcd's own lock
// (etcd_mutex.hpp). This file holds what is etcd's: the endpoints, the key
// prefix, the deadline of every call, and the check at start that etcd
// answers (its answer to a 1 s lease also tells its minimum TTL, which
// every shorter lease is raised to).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "adapters/common/line_adapter.hpp"

namespace lockstep::etcd_lock {

struct AdapterConfig {
  adapters::LineAdapterConfig server = [] {
    adapters::LineAdapterConfig config;
    config.port = 7879;
    return config;
  }();
  std::string etcd_endpoints;
  std::string prefix = "lockstep-etcd-lock";
  std::int64_t etcd_timeout_ms = 5'000;
};

// Why the configuration cannot run, or nothing.
std::optional<std::string> validate(const AdapterConfig& config);

// Runs until SIGTERM or SIGINT; returns the exit code: 0 after a signal, 2
// when it cannot start (bad configuration, port in use, etcd unreachable
// within --etcd-timeout-ms).
int run_adapter(const AdapterConfig& config);

}  // namespace lockstep::etcd_lock
