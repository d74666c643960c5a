// `lockstep-etcd-lock`: etcd's own lock behind lockstep's line protocol, so
// that `lockstep fuzz` can test it (docs/testing-other-lock-services.md).
// This file only reads the options; adapter.hpp says what the server does.
#include <CLI/CLI.hpp>

#include "adapters/common/adapter_options.hpp"
#include "adapters/etcd_lock/adapter.hpp"
#include "cli/validators.hpp"

int main(int argc, char** argv) {
  constexpr const char* program = "lockstep-etcd-lock";
  lockstep::etcd_lock::AdapterConfig config;
  CLI::App app{
      "lockstep-etcd-lock: serves lockstep's line protocol (docs/protocol.md) with etcd's own lock\n"
      "(concurrency.Mutex: a key per acquire under <prefix>/<key>/, its create revision as the token,\n"
      "leases of lease_ms rounded up to whole seconds). SIGTERM or SIGINT stops it (exit 0); a\n"
      "configuration it cannot run with, or an etcd that does not answer, is refused at start (exit 2)."};
  app.add_option("--etcd", config.etcd_endpoints, "etcd's client endpoints, host:port[,host:port...]")->required();
  app.add_option("--prefix", config.prefix, "the etcd key prefix of the locks (1 to 200 printable bytes)")
      ->capture_default_str();
  app.add_option("--etcd-timeout-ms", config.etcd_timeout_ms, "the deadline of every etcd call")
      ->check(lockstep::cli::whole_signed(100, 600'000))
      ->capture_default_str();
  lockstep::adapters::add_line_adapter_options(app, program, config.server);
  if (const auto code = lockstep::adapters::parse_command_line(app, program, argc, argv)) return *code;
  return lockstep::etcd_lock::run_adapter(config);
}
