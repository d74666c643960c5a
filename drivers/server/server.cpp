#include "drivers/server/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
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
#include "drivers/server/socket_connection.hpp"
#include "drivers/server/token_store.hpp"

namespace lockstep {

namespace {

constexpr int epoll_batch = 256;
constexpr std::uint64_t listener_key = 0;
constexpr std::uint64_t signal_key = UINT64_MAX;

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

class Server {
 public:
  explicit Server(const ServerConfig& config) : config_(config) {}
  ~Server();
  int run();

 private:
  bool start();
  void accept_all();
  void read_from(Connection& c);
  void handle_lines(Connection& c);
  bool handle_test_clock_line(Connection& c, std::string_view line);
  void end_input(Connection& c);
  void dispatch();
  void flush(Connection& c);
  void set_interest(Connection& c);
  void close_connection(Connection& c);
  TimeMs now() const;

  ServerConfig config_;
  std::unique_ptr<Engine> engine_;
  TokenStore tokens_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int signal_fd_ = -1;
  std::int64_t start_ms_ = 0;
  TimeMs test_now_{0};
  std::uint64_t next_connection_ = 1;
  std::map<ConnectionId, std::unique_ptr<Connection>> connections_;
  Outputs out_;
  AcceptCounts counts_;
  std::uint64_t lines_ = 0, slow_closed_ = 0;
  bool exhaustion_logged_ = false;
  bool failed_ = false;  // the token mark could not be persisted: stop, send nothing more
};

Server::~Server() {
  for (auto& [id, c] : connections_) ::close(c->fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (signal_fd_ >= 0) ::close(signal_fd_);
}

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

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal_fd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);

  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int yes = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(config_.port);
  if (inet_pton(AF_INET, config_.host.c_str(), &address.sin_addr) != 1) {
    fmt::print(stderr, "lockstep serve: '{}' is not an IPv4 address\n", config_.host);
    return false;
  }
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(listen_fd_, 1024) != 0) {
    fmt::print(stderr, "lockstep serve: cannot listen on {}:{}: {}\n", config_.host, config_.port, std::strerror(errno));
    return false;
  }
  socklen_t length = sizeof address;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
  config_.port = ntohs(address.sin_port);

  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = listener_key;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &event);
  event.data.u64 = signal_key;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, signal_fd_, &event);

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
  std::vector<epoll_event> events(epoll_batch);
  bool stopping = false;
  while (!stopping && !failed_) {
    const int timeout_ms = epoll_timeout_ms(connections_, config_.test_clock, engine_->next_due(), now());
    const int ready = epoll_wait(epoll_fd_, events.data(), epoll_batch, timeout_ms);
    if (ready < 0 && errno != EINTR) {
      fmt::print(stderr, "lockstep serve: epoll_wait: {}\n", std::strerror(errno));
      return 2;
    }
    if (!config_.test_clock) {
      engine_->advance(now(), out_);
      dispatch();
    }
    for (int i = 0; i < ready; ++i) {
      const auto& event = events[static_cast<std::size_t>(i)];
      if (event.data.u64 == signal_key) {
        stopping = true;
      } else if (event.data.u64 == listener_key) {
        accept_all();
      } else if (const auto found = connections_.find(ConnectionId{event.data.u64}); found != connections_.end()) {
        if (event.events & EPOLLOUT) flush(*found->second);
        if (event.events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_from(*found->second);
      }
    }
    // Each connection gets its share of lines, in connection order.
    for (auto& [id, c] : connections_) handle_lines(*c);
    for (auto& [id, c] : connections_) flush(*c);
    std::vector<Connection*> done;
    for (auto& [id, c] : connections_) {
      if (c->finished()) done.push_back(c.get());
    }
    for (auto* c : done) close_connection(*c);
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

void Server::accept_all() {
  accept_clients<Connection>(listen_fd_, epoll_fd_, connections_, config_.max_connections, config_.limits.max_line_bytes,
                             counts_, [this] { return ConnectionId{next_connection_++}; },
                             [](ConnectionId) {});
}

void Server::read_from(Connection& c) {
  if (c.read_chunk()) c.update_interest(epoll_fd_);
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

void Server::flush(Connection& c) {
  c.send_pending();
  c.update_interest(epoll_fd_);
}

void Server::set_interest(Connection& c) { c.update_interest(epoll_fd_); }

void Server::close_connection(Connection& c) {
  const ConnectionId id = c.id;
  const bool engine_closed = c.engine_closed;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  c.close_socket();
  connections_.erase(id);
  if (!engine_closed) engine_->on_close(id, now(), out_);
}

}  // namespace

int run_server(const ServerConfig& config) {
  Server server(config);
  return server.run();
}

}  // namespace lockstep
