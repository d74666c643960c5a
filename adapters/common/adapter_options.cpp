#include "adapters/common/adapter_options.hpp"

#include <string>

#include <fmt/format.h>

#include "cli/validators.hpp"
#include "cli/version.hpp"

namespace lockstep::adapters {

void add_line_adapter_options(CLI::App& app, std::string_view program, LineAdapterConfig& config) {
  using lockstep::cli::whole;
  using lockstep::cli::whole_signed;
  app.set_version_flag("--version", fmt::format("{} {}", program, build_version()),
                       "print the version and the commit it was built from, and exit");
  app.add_option("--host", config.host, "IPv4 address to listen on")->capture_default_str();
  app.add_option("--port", config.port, "TCP port to listen on (0: a free one, named in the start-up line)")
      ->check(whole(0, 65'535))
      ->capture_default_str();
  auto& limits = config.limits;
  const auto duration_max = static_cast<std::int64_t>(lockstep::duration_limit_max.value);
  app.add_option("--max-lease-ms", limits.max_lease_ms.value, "longest lease a request may ask (E past it)")
      ->check(whole_signed(1, duration_max))
      ->capture_default_str();
  app.add_option("--max-wait-ms", limits.max_wait_ms.value, "longest wait a request may ask (E past it)")
      ->check(whole_signed(0, duration_max))
      ->capture_default_str();
  app.add_option("--max-line-bytes", limits.max_line_bytes, "longest request line, without its newline")
      ->check(whole(lockstep::line_bytes_limit_min, lockstep::line_bytes_limit_max))
      ->capture_default_str();
  app.add_option("--max-waiters-per-key", limits.max_waiters_per_key,
                 "acquires of one key waiting in the service at most (B past it)")
      ->check(whole(0, lockstep::count_limit_max))
      ->capture_default_str();
  app.add_option("--max-waiters", limits.max_waiters, "acquires waiting in the service at most, in all (B past it)")
      ->check(whole(0, lockstep::count_limit_max))
      ->capture_default_str();
  app.add_option("--max-in-flight", config.max_in_flight,
                 "requests being carried out at once, each on a thread (E past it)")
      ->check(whole(1, 100'000))
      ->capture_default_str();
  app.add_option("--max-connections", config.max_connections, "client connections at once")
      ->check(whole(1, 100'000))
      ->capture_default_str();
  app.add_option("--max-output-bytes", config.max_output_bytes,
                 "answers held for a client that does not read them; past it, it is closed")
      ->check(whole(1'024, std::uint64_t{1} << 32))
      ->capture_default_str();
  app.add_option("--lines-per-turn", config.lines_per_turn, "lines of one connection read per turn of the loop")
      ->check(whole(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--session-window", config.sessions.window,
                 "outcomes kept per session client: a request whose seq is at or below the client's highest "
                 "less this is `E stale request`")
      ->check(whole(1, lockstep::cluster::session_window_max))
      ->capture_default_str();
  app.add_option("--session-clients-max", config.sessions.clients_max, "session clients kept")
      ->check(whole(1, lockstep::cluster::session_clients_max))
      ->capture_default_str();
  app.add_flag("--quiet", config.quiet, "no line at start and stop");
}

std::optional<int> parse_command_line(CLI::App& app, std::string_view program, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (auto& c : what) {
      if (c == '\n') c = ' ';
    }
    fmt::print(stderr, "{}: {} (see {} --help)\n", program, what, program);
    return 2;
  }
  return std::nullopt;
}

}  // namespace lockstep::adapters
