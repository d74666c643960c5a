#include "drivers/server/server.hpp"

#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "impl/engine.hpp"
#include "impl/line_framer.hpp"
#include "drivers/server/line_loop.hpp"
#include "drivers/server/token_store.hpp"

namespace lockstep {

namespace {

std::int64_t monotonic_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

struct Connection : SocketConnection {
  bool engine_closed = false;  // its waiters were dropped

  using SocketConnection::SocketConnection;
  bool finished() const { return slow || (!reading && !has_work() && pending_output() == 0); }
};

class Server : LineLoop<Connection> {
 public:
  explicit Server(const ServerConfig& config) : config_(config) {}
  int run();

 private:
  bool start();
  void handle_lines(Connection& c);
  bool handle_test_clock_line(Connection& c, std::string_view line);
  void end_input(Connection& c);
  void dispatch();
  void close_connection(Connection& c);
  TimeMs now() const;

  ServerConfig config_;
  std::unique_ptr<Engine> engine_;
  TokenStore tokens_;
  std::int64_t start_ms_ = 0;
  TimeMs test_now_{0};
  Outputs out_;
  std::uint64_t lines_ = 0, slow_closed_ = 0;
  bool exhaustion_logged_ = false;
  bool failed_ = false;  // the token mark could not be persisted: stop, send nothing more
};

// The engine's clock: the test clock, or monotonic ms since start. Never
// behind the engine (monotonic clocks do not go back, but be exact).
TimeMs Server::now() const {
  if (config_.test_clock) return test_now_;
  return std::max(TimeMs{monotonic_ms() - start_ms_}, engine_->now());
}

bool Server::start() {
  if (auto error = validate(config_.limits)) {
    fmt::print(stderr, "lockstep serve: {}\n", *error);
    return false;
  }
  const auto first = tokens_.open(config_.state_file);
  if (!first) {
    fmt::print(stderr, "lockstep serve: {}\n", tokens_.error());
    return false;
  }
  engine_ = std::make_unique<Engine>(Engine::Config{config_.limits, *first, std::uint64_t{1} << 20, config_.bug});
  start_ms_ = monotonic_ms();

  sockets_.open();
  auto error = sockets_.bind(config_.host, config_.port);
  if (!error) error = sockets_.listen(config_.host, config_.port);
  if (error) {
    fmt::print(stderr, "lockstep serve: {}\n", *error);
    return false;
  }

  if (!config_.quiet) {
    const auto& l = config_.limits;
    fmt::print(stderr,
               "lockstep serve: listening on {}:{} (max_keys={} max_waiters_per_key={} max_waiters={} "
               "sweep_ms={} max_lease_ms={} max_wait_ms={} max_line_bytes={} max_connections={}{}{}, "
               "first token {})\n",
               config_.host, config_.port, l.max_keys, l.max_waiters_per_key, l.max_waiters,
               l.sweep_ms.value, l.max_lease_ms.value, l.max_wait_ms.value, l.max_line_bytes,
               config_.max_connections, config_.test_clock ? ", test clock" : "",
               config_.bug == InjectedBug::none ? "" : fmt::format(", injected bug {}", bug_name(config_.bug)),
               first->value);
  }
  return true;
}

int Server::run() {
  // Exit codes (docs/protocol.md, "Exit codes"): 2 when the configuration or
  // the environment does not allow serving, or stops it.
  if (!start()) return 2;
  std::vector<epoll_event> events;
  bool stopping = false;
  while (!stopping && !failed_) {
    const int ready = wait(events, timeout_ms(config_.test_clock, engine_->next_due(), now()));
    if (ready < 0) {
      fmt::print(stderr, "lockstep serve: epoll_wait: {}\n", std::strerror(errno));
      return 2;
    }
    if (!config_.test_clock) {
      engine_->advance(now(), out_);
      dispatch();
    }
    for (int i = 0; i < ready; ++i) {
      const auto& event = events[static_cast<std::size_t>(i)];
      if (event.data.u64 == LoopSockets::signal_key) {
        stopping = true;
      } else {
        listener_or_client_event(event, config_.max_connections, config_.limits.max_line_bytes,
                                 [this](Connection& c) { set_interest(c); });
      }
    }
    end_turn([this](Connection& c) { handle_lines(c); }, [this](Connection& c) { close_connection(c); });
    dispatch();
    for (auto& [id, c] : connections_) flush(*c);
  }
  if (!config_.quiet) {
    fmt::print(stderr, "lockstep serve: stopped ({} connections accepted, {} refused at the limit, {} closed for "
                       "not reading, {} lines)\n",
               counts_.accepted, counts_.refused, slow_closed_, lines_);
  }
  return failed_ ? 2 : 0;
}

void Server::handle_lines(Connection& c) {
  // The lines of one turn arrived together: they are handled at one instant
  // (the clock is read once), and their responses are appended to the
  // connection's output once they are all handled, to go out in one send.
  // Nothing is sent before dispatch() persisted the token mark.
  const TimeMs at = now();
  for (std::uint64_t handled = 0; handled < config_.lines_per_turn && c.has_work(); ++handled) {
    const auto line = c.framer.next_line();
    ++lines_;
    if (config_.test_clock && handle_test_clock_line(c, *line)) continue;
    const TimeMs instant = config_.test_clock ? now() : at;
    if (engine_->on_line(c.id, *line, instant, out_) == LineOutcome::close_connection) end_input(c);
  }
  dispatch();
  if (!c.discarding && c.framer.overlong() && !c.framer.has_complete_line()) {
    // A line past the limit: E, then the connection closes (docs/protocol.md).
    out_.push_back({c.id, Response::error(fmt::format("line longer than {} bytes", config_.limits.max_line_bytes))});
    dispatch();
    end_input(c);
  }
}

// No more input is taken from `c`: its waiters are dropped at once; the
// responses already owed to it are still written before it closes.
void Server::end_input(Connection& c) {
  c.reading = false;
  c.discarding = true;
  if (!c.engine_closed) {
    c.engine_closed = true;
    engine_->on_close(c.id, now(), out_);
    dispatch();
  }
  set_interest(c);
}

bool Server::handle_test_clock_line(Connection& c, std::string_view line) {
  if (line == "X") {
    end_input(c);
    return true;
  }
  if (!line.starts_with("C ")) return false;
  const auto digits = line.substr(2);
  const bool numeric = !digits.empty() && digits.size() <= 19 &&
                       std::all_of(digits.begin(), digits.end(), [](char d) { return d >= '0' && d <= '9'; });
  const auto value = numeric ? std::stoull(std::string(digits)) : 0;
  if (!numeric || value > static_cast<std::uint64_t>(time_max.value) ||
      TimeMs{static_cast<std::int64_t>(value)} < test_now_) {
    out_.push_back({c.id, Response::error(numeric ? "C must not move the clock back" : "expected C <now_ms>")});
    dispatch();
    return true;
  }
  test_now_ = TimeMs{static_cast<std::int64_t>(value)};
  engine_->advance(test_now_, out_);
  dispatch();
  // The marker goes on every accepted connection, after its responses.
  const auto marker = fmt::format("C {}\n", test_now_.value);
  for (auto& [id, other] : connections_) {
    if (!other->engine_closed) other->output += marker;
  }
  return true;
}

void Server::dispatch() {
  if (out_.empty()) return;
  if (failed_) {
    out_.clear();
    return;
  }
  // Persist before send: the mark on disk covers every token about to go out.
  // A mark that cannot be persisted stops the server before anything of this
  // call is sent: a token the disk does not cover must never reach a client.
  if (!tokens_.persist(engine_->token_mark())) {
    fmt::print(stderr, "lockstep serve: cannot persist the token mark, stopping: {}\n", tokens_.error());
    failed_ = true;
    out_.clear();
    return;
  }
  if (engine_->tokens_exhausted() && !exhaustion_logged_) {
    // Once, whatever --quiet says: from now on every acquire is refused.
    exhaustion_logged_ = true;
    fmt::print(stderr, "lockstep serve: tokens exhausted (the last token, {}, is issued): every acquire is "
                       "answered `E tokens exhausted` from now on; releases are still served\n",
               UINT64_MAX);
  }
  for (const auto& o : out_) {
    const auto found = connections_.find(o.connection);
    if (found == connections_.end()) continue;  // closed meanwhile: nothing is owed to it
    Connection& c = *found->second;
    if (c.slow) continue;
    append_response_line(o.response, c.output);
    if (c.pending_output() > config_.max_output_bytes) {
      // A client that does not read its responses: it is closed, and its
      // waiters dropped, before it can make the server hold more.
      c.slow = true;
      ++slow_closed_;
    }
  }
  out_.clear();
}

void Server::close_connection(Connection& c) {
  const ConnectionId id = c.id;
  const bool engine_closed = c.engine_closed;
  drop(c);
  if (!engine_closed) engine_->on_close(id, now(), out_);
}

}  // namespace

int run_server(const ServerConfig& config) {
  Server server(config);
  return server.run();
}

}  // namespace lockstep
