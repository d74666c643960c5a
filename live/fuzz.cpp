#include "live/fuzz.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "client/line_socket.hpp"
#include "impl/line_framer.hpp"
#include "impl/prng.hpp"
#include "impl/protocol.hpp"
#include "live/process.hpp"

namespace lockstep::live {

namespace {

using Clock = std::chrono::steady_clock;

struct Held {
  std::string key, owner;
  std::uint64_t token = 0;
};

struct Connection {
  std::uint32_t id = 0;
  int fd = -1;
  LineFramer framer{1 << 20};
  std::string output;
  std::uint32_t outstanding = 0;  // requests sent and not yet answered
  std::vector<std::string> owners;
  std::vector<Held> held;
  std::map<std::pair<std::string, std::string>, int> pending_acquires;  // (owner, key) -> count
  std::int64_t next_action_us = 0;
  // The last instant the tester knew nothing was waiting to be read on it:
  // what it reads next arrived after this (recorded as `after_us`).
  std::int64_t quiet_us = 0;
  std::uint64_t close_after_token = 0;  // close once this barrier release is answered
  std::int64_t close_by_us = 0;
  std::deque<std::int64_t> releases_sent_us;  // releases not yet answered, oldest first
};

class Fuzzer {
 public:
  Fuzzer(const FuzzOptions& options, std::function<void()> on_started)
      : options_(options), on_started_(std::move(on_started)), rng_(options.seed), start_(Clock::now()) {
    run_.history.header.limits = options.limits;
    run_.history.header.tolerance_ms = options.tolerance_ms;
    run_.history.header.seed = options.seed;
    run_.history.header.target = options.command.empty() ? fmt::format("{}:{}", options.host, options.port) : options.command;
    const double per_client_rate = 1.0;  // requests per ms over all clients, by default
    gap_ms_ = options.mean_gap_ms > 0 ? options.mean_gap_ms : std::max(2.0, options.clients / per_client_rate / 2);
  }

  FuzzRun run() {
    if (!start_target()) return std::move(run_);
    run_.started = true;
    if (on_started_) on_started_();
    // The run's time and each incarnation's count from when the target
    // accepts: a server slow to start shortens neither.
    const auto period_us = static_cast<std::int64_t>(options_.restart_every_s * 1e6);
    const std::int64_t end_us = now_us() + static_cast<std::int64_t>(options_.duration_s * 1e6);
    std::int64_t next_restart_us = period_us > 0 ? now_us() + period_us : -1;
    while (now_us() < end_us && run_.error.empty()) {
      if (next_restart_us > 0 && now_us() >= next_restart_us) {
        restart();
        next_restart_us = now_us() + period_us;
        continue;
      }
      keep_connections();
      act();
      pump(next_wakeup_us());
      watch_.sample();
    }
    drain();
    for (auto& conn : conns_) close_connection(*conn, history::EventKind::close);
    conns_.clear();
    watch_.sample(true);
    if (server_) {
      watch_.stopping(server_->pid());
      server_->stop();
    }
    run_.processes = watch_.processes();
    run_.tester = watch_.tester();
    return std::move(run_);
  }

 private:
  std::int64_t now_us() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
  }

  void record(history::EventKind kind, std::uint32_t conn, std::string line = {}, std::int64_t after_us = -1) {
    run_.history.events.push_back(history::Event{now_us(), kind, conn, std::move(line), after_us});
  }

  bool start_target() {
    if (options_.command.empty()) {
      port_ = options_.port;
      if (!client::LineSocket::connect(options_.host, port_, std::chrono::seconds(5))) {
        run_.error = fmt::format("nothing accepts connections on {}:{} (tried for 5 s)", options_.host, port_);
        return false;
      }
      return true;
    }
    const auto port = client::pick_free_port();
    if (!port) {
      run_.error = "no free port for the target";
      return false;
    }
    port_ = *port;
    state_file_ = fmt::format("/tmp/lockstep-fuzz-{}-{}.state", getpid(), port_);
    ::unlink(state_file_.c_str());
    return launch();
  }

  bool launch() {
    auto values = template_values(port_, options_.limits);
    values["state_file"] = state_file_;
    const auto command = fill_template(options_.command, values);
    log_path_ = fmt::format("/tmp/lockstep-fuzz-{}-{}.log", getpid(), port_);
    server_.reset();
    auto started = ServerProcess::start(command, log_path_);
    if (started) server_.emplace(std::move(*started));
    if (!server_) {
      run_.error = "cannot start: " + command;
      return false;
    }
    watch_.started("server", server_->pid());
    // Ready when it accepts a connection.
    const auto accepted = wait_until_accepting(*server_, options_.host, port_, std::chrono::seconds(10));
    if (!accepted.socket) {
      run_.error = fmt::format("the target '{}' cannot start: {}", command, accepted.why_not);
      run_.target_output = accepted.output;
      return false;
    }
    return true;
  }

  // The old incarnation ends only when it is gone: every process of its
  // group has exited (a shell that did not `exec` the server exits first,
  // and the server may take its time) and its port no longer accepts (a
  // dying server's listener still fills its backlog, and resets what it
  // accepted when it closes). Until then its connections are read: what
  // it still answers belongs to it, before the `down`. Only then is the
  // new one started, and `up` written once it accepts.
  void restart() {
    pump(now_us());
    watch_.stopping(server_->pid());
    stopping_ = true;
    server_->terminate();
    const auto grace_until = now_us() + 2'000'000;
    while (server_->group_alive() && now_us() < grace_until) pump(std::min(grace_until, now_us() + 5'000));
    server_->stop(std::chrono::milliseconds(0));  // SIGKILL to what outlived the grace, and wait for it
    for (auto& conn : conns_) {
      if (conn->fd >= 0) read_available(*conn);  // what it sent before it exited
      if (conn->fd >= 0) ::close(conn->fd);
      conn->fd = -1;
    }
    conns_.clear();
    stopping_ = false;
    const auto port_closed_by = now_us() + 2'000'000;
    while (port_accepts(options_.host, port_)) {
      if (now_us() >= port_closed_by) {
        run_.error = fmt::format(
            "every process of the target's group has exited, but port {} still accepts connections: a process "
            "outside the group holds it (docs/protocol.md, \"Running under the tools\")",
            port_);
        return;
      }
      ::usleep(5'000);
    }
    record(history::EventKind::down, 0);
    ++run_.restarts;
    if (!launch()) return;
    record(history::EventKind::up, 0);
    last_pump_us_ = -1;  // starting the target is no stall of the fuzzer
  }

  void keep_connections() {
    std::erase_if(conns_, [](const auto& conn) { return conn->fd < 0; });
    while (conns_.size() < options_.clients) {
      auto socket = client::LineSocket::connect(options_.host, port_, std::chrono::seconds(5));
      if (!socket) {
        run_.error = fmt::format("cannot connect to {}:{}", options_.host, port_);
        return;
      }
      auto conn = std::make_unique<Connection>();
      conn->id = next_conn_id_++;
      conn->fd = ::dup(socket->fd());
      ::fcntl(conn->fd, F_SETFL, ::fcntl(conn->fd, F_GETFL) | O_NONBLOCK);
      const auto owner_count = 1 + rng_.below(3);
      for (std::uint64_t i = 0; i < owner_count; ++i) {
        // A few owners are shared by several connections: the same owner
        // asking again from elsewhere.
        conn->owners.push_back(rng_.chance(0.2) ? fmt::format("shared{}", rng_.below(3))
                                                : fmt::format("c{}o{}", conn->id, i));
      }
      // Clients start spread over one mean gap, not all in the first
      // millisecond: a burst of requests on one key whose answers come back
      // together leaves every order of them possible for a while.
      conn->next_action_us = now_us() + static_cast<std::int64_t>(rng_.below(static_cast<std::uint64_t>(gap_ms_ * 1000) + 1));
      conn->quiet_us = now_us();
      record(history::EventKind::connect, conn->id);
      if (next_conn_id_ > options_.clients) ++run_.reconnects;
      conns_.push_back(std::move(conn));
    }
  }

  std::string key_name() {
    // Two hot keys take half the traffic, so waiters, hand-offs and
    // limits are reached; the rest spreads over all keys.
    const auto hot = std::min<std::uint32_t>(2, options_.keys);
    const auto index = rng_.chance(0.5) ? rng_.below(hot) : rng_.below(options_.keys);
    return fmt::format("k{}", index);
  }

  // Log-uniform in [low, high]: as many short as long durations per decade.
  std::int64_t log_uniform(std::int64_t low, std::int64_t high) {
    if (low >= high) return low;
    const double a = std::log(static_cast<double>(std::max<std::int64_t>(low, 1)));
    const double b = std::log(static_cast<double>(high));
    return std::clamp(static_cast<std::int64_t>(std::exp(a + (b - a) * rng_.unit())), low, high);
  }

  // Within [low, high]: a third near the low end (leases that expire and
  // waits that time out within the run), a third around the sweep period
  // when the range reaches it (expiries a sweep must clear, waiters handed
  // the key by a sweep), the rest log-uniform over the range.
  std::int64_t duration_in(std::int64_t low, std::int64_t high) {
    const auto sweep = options_.limits.sweep_ms.value;
    const double pick = rng_.unit();
    if (pick < 0.33) return rng_.between(low, low + std::max<std::int64_t>(1, (high - low) / 16));
    if (pick < 0.66) {
      const auto near_low = std::max(low, sweep / 2), near_high = std::min(high, sweep + sweep / 2);
      if (near_low <= near_high) return rng_.between(near_low, near_high);
    }
    return log_uniform(low, high);
  }

  std::int64_t lease_ms() { return duration_in(options_.lease_min_ms, options_.lease_max_ms); }

  // A try-lock a third of the time when the range allows 0.
  std::int64_t wait_ms() {
    if (options_.wait_min_ms == 0 && (options_.wait_max_ms == 0 || rng_.chance(0.35))) return 0;
    return waiting_ms();
  }
  // A wait of at least 1 ms (when the range allows one; else 0).
  std::int64_t waiting_ms() {
    if (options_.wait_max_ms == 0) return 0;
    return duration_in(std::max<std::int64_t>(1, options_.wait_min_ms), options_.wait_max_ms);
  }

  void send(Connection& conn, const std::string& line, bool answered = true) {
    record(history::EventKind::send, conn.id, line);
    conn.output += line;
    conn.output += '\n';
    if (answered) ++conn.outstanding;
    ++run_.sent;
    flush(conn);
  }

  // A release is answered at once (R or N) by a server that runs: the
  // oldest one unanswered tells how long the target has been silent.
  void send_release(Connection& conn, const std::string& key, std::uint64_t token) {
    conn.releases_sent_us.push_back(now_us());
    send(conn, fmt::format("R {} {}", key, token));
  }

  void acquire(Connection& conn, const std::string& key, const std::string& owner, std::int64_t wait,
               bool probe = true) {
    // One acquire per (owner, key) at a time on a connection, so that each
    // answer names its request without doubt.
    auto& pending = conn.pending_acquires[{owner, key}];
    if (pending > 0) return;
    ++pending;
    send(conn, fmt::format("A {} {} {} {}", key, owner, lease_ms(), wait));
    // An acquire that may wait is answered late, if at all; a release of a
    // token nobody holds, right behind it, is answered `N` at once, and that
    // answer shows when the acquire was handled (the server handles one
    // connection's lines in order). Without it, when a waiter was queued is
    // known only from its own answer, and the checker must carry every
    // instant it may have been queued at.
    if (wait > 0 && probe) send_release(conn, key, random_token());
  }

  std::uint64_t random_token() { return 1 + rng_.below(std::uint64_t{1} << 62); }

  void one_request(Connection& conn) {
    const double pick = rng_.unit();
    const auto& owner = conn.owners[rng_.below(conn.owners.size())];
    if (pick < 0.42 || (pick < 0.67 && conn.held.empty())) {
      acquire(conn, key_name(), owner, wait_ms());
    } else if (pick < 0.67) {
      const auto index = rng_.below(conn.held.size());
      send_release(conn, conn.held[index].key, conn.held[index].token);
    } else if (pick < 0.75 && !stale_.empty()) {
      const auto& old = stale_[rng_.below(stale_.size())];
      send_release(conn, old.key, old.token);
    } else if (pick < 0.80) {
      send_release(conn, key_name(), random_token());
    } else if (pick < 0.86 && !conn.held.empty()) {
      // The holder's owner asks again (no special treatment).
      const auto& held = conn.held[rng_.below(conn.held.size())];
      acquire(conn, held.key, held.owner, wait_ms());
    } else if (pick < 0.89) {
      malformed(conn);
    } else {
      acquire(conn, key_name(), owner, waiting_ms());
    }
  }

  void malformed(Connection& conn) {
    if (!options_.clear_of_limits && rng_.chance(0.05)) {
      // Longer than the limit: answered `E`, then the server closes.
      send(conn, std::string(options_.limits.max_line_bytes + 8, 'x'));
      return;
    }
    // Malformed by the words of docs/protocol.md: fields missing or extra, an unknown
    // request, a number that is not one, a lease of 0.
    static const char* const contract_lines[] = {"A k0", "X", "A k0 o 0 5", "R k0 token", "A k0 o 1 1 1"};
    // Malformed by this project's stricter reading (docs/protocol.md,
    // "Decisions").
    static const char* const strict_lines[] = {"A  k0 o 1 1", "R k0 0", ""};
    const auto total = std::size(contract_lines) + (options_.strict_syntax ? std::size(strict_lines) : 0);
    const auto pick = rng_.below(total);
    std::string line = pick < std::size(contract_lines) ? contract_lines[pick]
                                                         : strict_lines[pick - std::size(contract_lines)];
    if (!options_.clear_of_limits && rng_.chance(0.2)) {
      line = fmt::format("A k0 o {} 0", options_.limits.max_lease_ms.value + 1);
    }
    send(conn, line);
  }

  // Whether the target has answered no release for a while: then it is
  // stalled (not scheduled, or stuck), and what the workload would send
  // now would only pile up behind it and arrive in one burst when it runs
  // again, a burst whose order no tester can see. The workload waits.
  bool target_silent(std::int64_t now) const {
    constexpr std::int64_t silent_us = 20'000;
    return std::any_of(conns_.begin(), conns_.end(), [&](const auto& conn) {
      return conn->fd >= 0 && !conn->releases_sent_us.empty() && now - conn->releases_sent_us.front() > silent_us;
    });
  }

  void act() {
    const auto now = now_us();
    if (target_silent(now)) {
      ++run_.held_back;
      return;
    }
    for (auto& holder : conns_) {
      auto& conn = *holder;
      if (conn.fd < 0) continue;
      if (conn.close_after_token != 0) {
        if (now >= conn.close_by_us) close_connection(conn, history::EventKind::close);
        continue;
      }
      if (now < conn.next_action_us) continue;
      const double pick = rng_.unit();
      if (pick < 0.03) {
        // Close with a waiter queued: ask with a wait, then a release of a
        // random token whose answer shows the acquire was handled; close then.
        const auto key = key_name();
        acquire(conn, key, conn.owners.front(), waiting_ms(), false);
        conn.close_after_token = random_token();
        send_release(conn, key, conn.close_after_token);
        conn.close_by_us = now + 1'000'000;
      } else if (pick < 0.13) {
        const auto count = 2 + rng_.below(3);  // pipelined
        for (std::uint64_t i = 0; i < count; ++i) one_request(conn);
      } else {
        one_request(conn);
      }
      conn.next_action_us = now + static_cast<std::int64_t>(-std::log(1 - rng_.unit()) * gap_ms_ * 1000);
    }
  }

  std::int64_t next_wakeup_us() const {
    std::int64_t next = now_us() + 5'000;
    for (const auto& conn : conns_) next = std::min(next, conn->next_action_us);
    return next;
  }

  void flush(Connection& conn) {
    while (!conn.output.empty() && conn.fd >= 0) {
      const auto written = ::send(conn.fd, conn.output.data(), conn.output.size(), MSG_NOSIGNAL);
      if (written <= 0) return;  // try again when writable (or it broke: the read side sees it)
      conn.output.erase(0, static_cast<std::size_t>(written));
    }
  }

  void close_connection(Connection& conn, history::EventKind kind) {
    if (conn.fd < 0) return;
    // What already arrived is read first: a close ends what can be seen,
    // and an answer that was waiting unread must not count as missing.
    if (kind == history::EventKind::close) read_available(conn);
    ::close(conn.fd);
    conn.fd = -1;
    record(kind, conn.id);
  }

  void on_line(Connection& conn, std::string_view line) {
    record(history::EventKind::recv, conn.id, std::string(line), conn.quiet_us);
    ++run_.received;
    if (conn.outstanding > 0) --conn.outstanding;
    const auto response = parse_response(line);
    if (!response) return;
    switch (response->kind) {
      case ResponseKind::granted:
        conn.held.push_back(Held{response->key, response->owner, response->token.value});
        [[fallthrough]];
      case ResponseKind::timed_out:
      case ResponseKind::busy: {
        auto it = conn.pending_acquires.find({response->owner, response->key});
        if (it != conn.pending_acquires.end() && it->second > 0) --it->second;
        break;
      }
      case ResponseKind::released:
      case ResponseKind::not_held: {
        if (!conn.releases_sent_us.empty()) {
          run_.slowest_release_us = std::max(run_.slowest_release_us, now_us() - conn.releases_sent_us.front());
          conn.releases_sent_us.pop_front();
        }
        const auto token = response->token.value;
        const auto before = conn.held.size();
        std::erase_if(conn.held, [&](const Held& held) { return held.token == token && held.key == response->key; });
        if (conn.held.size() != before || response->kind == ResponseKind::released) {
          stale_.push_back(Held{response->key, "", token});
          if (stale_.size() > 64) stale_.erase(stale_.begin());
        }
        if (token == conn.close_after_token) conn.close_by_us = 0;  // close at the next turn
        break;
      }
      case ResponseKind::error: break;
    }
  }

  // Waits for input until `until_us`, reading and recording every line.
  void pump(std::int64_t until_us) {
    std::vector<pollfd> fds;
    std::vector<Connection*> owners;
    for (auto& conn : conns_) {
      if (conn->fd < 0) continue;
      fds.push_back(pollfd{conn->fd, static_cast<short>(POLLIN | (conn->output.empty() ? 0 : POLLOUT)), 0});
      owners.push_back(conn.get());
    }
    const auto wait_ms = std::max<std::int64_t>(0, (until_us - now_us() + 999) / 1000);
    const auto timeout_ms = std::min<std::int64_t>(wait_ms, 100);
    // A socket poll finds empty had nothing waiting since before the call.
    const auto polled_us = now_us();
    // The loop's turn since the last poll should take microseconds.
    if (last_pump_us_ >= 0) note_stall(last_pump_us_, polled_us);
    if (fds.empty()) {
      ::usleep(static_cast<useconds_t>(wait_ms * 1000));
      note_stall(polled_us + wait_ms * 1000, now_us());
      last_pump_us_ = now_us();
      return;
    }
    const auto ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout_ms));
    if (ready == 0) note_stall(polled_us + timeout_ms * 1000, now_us());
    last_pump_us_ = now_us();
    for (std::size_t i = 0; i < fds.size(); ++i) {
      auto& conn = *owners[i];
      if (ready > 0 && (fds[i].revents & POLLOUT)) flush(conn);
      if (ready <= 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        conn.quiet_us = std::max(conn.quiet_us, polled_us);
        continue;
      }
      read_once(conn);
    }
  }

  // The fuzzer was due to run at `due_us` and ran at `ran_us`: past a
  // millisecond, the time the machine did not schedule it.
  void note_stall(std::int64_t due_us, std::int64_t ran_us) {
    if (ran_us - due_us > run_.tester_stall_us) {
      run_.tester_stall_us = ran_us - due_us;
      run_.tester_stall_at_us = due_us;
    }
  }

  // One read of what is waiting; false when the connection ended.
  bool read_once(Connection& conn) {
    char buffer[65536];
    const auto reading_us = now_us();
    const auto got = ::recv(conn.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      conn.quiet_us = reading_us;
      return true;
    }
    if (got <= 0) {
      if (stopping_) {
        ::close(conn.fd);
        conn.fd = -1;
      } else {
        close_connection(conn, history::EventKind::eof);
      }
      return false;
    }
    conn.framer.feed(std::string_view(buffer, static_cast<std::size_t>(got)));
    while (auto line = conn.framer.next_line()) on_line(conn, *line);
    // Less than a full buffer: nothing was left waiting when it was read.
    if (static_cast<std::size_t>(got) < sizeof buffer) conn.quiet_us = reading_us;
    return conn.fd >= 0;
  }

  void read_available(Connection& conn) {
    for (int reads = 0; reads < 64 && conn.fd >= 0; ++reads) {
      const auto before = conn.quiet_us;
      if (!read_once(conn) || conn.quiet_us != before) return;
    }
  }

  // No new requests; wait for every answer owed (a waiter's at the latest
  // by its deadline), then the tolerance, so that nothing is in flight.
  void drain() {
    // Every answer owed comes by the longest wait asked, and the tolerance:
    // past that, a server that is silent is not going to answer.
    const auto deadline = now_us() + (options_.wait_max_ms + options_.tolerance_ms + 2'000) * 1000;
    while (now_us() < deadline &&
           std::any_of(conns_.begin(), conns_.end(), [](const auto& c) { return c->fd >= 0 && c->outstanding > 0; })) {
      pump(now_us() + 5'000);
    }
    const auto settle = now_us() + (options_.tolerance_ms + 5) * 1000;
    while (now_us() < settle) pump(settle);
  }

  FuzzOptions options_;
  std::function<void()> on_started_;
  Prng rng_;
  Clock::time_point start_;
  FuzzRun run_;
  double gap_ms_ = 10;
  std::uint16_t port_ = 0;
  std::string state_file_, log_path_;
  std::optional<ServerProcess> server_;
  ResourceWatch watch_{std::chrono::seconds(static_cast<std::int64_t>(options_.duration_s))};
  std::vector<std::unique_ptr<Connection>> conns_;
  std::vector<Held> stale_;
  std::uint32_t next_conn_id_ = 1;
  bool stopping_ = false;  // the target was stopped: its connections end with the `down`
  std::int64_t last_pump_us_ = -1;  // when the last poll returned
};

}  // namespace

FuzzRun run_fuzz(const FuzzOptions& options, const std::function<void()>& on_started) {
  return Fuzzer(options, on_started).run();
}

void default_ranges(FuzzOptions& options) {
  const auto& limits = options.limits;
  if (options.lease_max_ms < 0) {
    options.lease_min_ms = 1;
    options.lease_max_ms = std::min(limits.max_lease_ms.value,
                                    std::max<std::int64_t>(400, limits.sweep_ms.value + limits.sweep_ms.value / 2));
  }
  if (options.wait_max_ms < 0) {
    options.wait_min_ms = 0;
    options.wait_max_ms = std::min<std::int64_t>(limits.max_wait_ms.value, 1'500);
  }
}

}  // namespace lockstep::live
