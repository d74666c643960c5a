#include "adapters/common/line_adapter.hpp"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "drivers/etcd/event_queue.hpp"
#include "drivers/server/line_loop.hpp"
#include "impl/line_framer.hpp"
#include "impl/protocol.hpp"

namespace lockstep::adapters {

namespace {

constexpr std::uint64_t workers_key = LoopSockets::signal_key - 1;
// The workers' events are small; this only bounds a flood of them.
constexpr std::size_t worker_events_bytes_max = 1 << 20;
constexpr std::size_t worker_event_bytes = 64;

// What a worker tells the loop.
struct Placed {
  std::uint64_t request = 0;
};
struct Finished {
  std::uint64_t request = 0;
  std::optional<Response> response;  // nothing: the adapter stopped first
  bool dropped = false;              // a waiter that left with its connection (response: its T)
  bool lost = false;  // a waiter the service dropped, or a release whose outcome is unknown: its connection is
                      // closed unanswered
};
using WorkerEvent = std::variant<Placed, Finished>;

struct Connection : SocketConnection {
  bool aborted = false;  // an answer it is owed cannot be given: closed once its output is out
  std::optional<std::uint64_t> unplaced;  // a request of its own not yet placed in the service
  std::uint64_t answers_owed = 0;         // requests whose answer goes here

  using SocketConnection::SocketConnection;
  bool has_work() const { return !discarding && !unplaced && framer.has_complete_line(); }
  bool finished() const {
    return slow || (aborted && pending_output() == 0) ||
           (!reading && (discarding || !framer.has_complete_line()) && !unplaced && answers_owed == 0 &&
            pending_output() == 0);
  }
};

struct Request {
  std::optional<ConnectionId> answer_to;  // nothing once that connection closed
  ConnectionId sent_on;
  cluster::Session session;
  bool acquire = false;
  std::shared_ptr<Cancellation> cancel = std::make_shared<Cancellation>();
  std::thread worker;
};

class Adapter : LineLoop<Connection> {
 public:
  Adapter(std::string_view program, const LineAdapterConfig& config, LockService& service)
      : program_(program),
        config_(config),
        service_(service),
        slots_(config.limits.max_waiters_per_key, config.limits.max_waiters),
        sessions_(config.sessions),
        events_(worker_events_bytes_max) {}
  ~Adapter();
  int run();

 private:
  int start();
  void handle_lines(Connection& c);
  void handle_line(Connection& c, std::string_view line);
  void overlong(Connection& c);
  void dispatch(Connection& c, const SessionRequest& parsed);
  void on_worker_event(WorkerEvent& event);
  void answer(std::optional<ConnectionId> to, const Response& response);
  void end_input(Connection& c);
  void close_connection(Connection& c);
  void stop_workers();

  const std::string program_;
  LineAdapterConfig config_;
  LockService& service_;
  WaiterSlots slots_;
  cluster::SessionTable sessions_;
  std::uint64_t session_uses_ = 0;
  etcd::EventQueue<WorkerEvent> events_;

  bool stop_ = false;

  std::uint64_t next_request_ = 1;
  std::map<std::uint64_t, Request> requests_;
  std::uint64_t slow_closed_ = 0, lines_ = 0, granted_ = 0, lost_ = 0;
};

Adapter::~Adapter() {
  stop_workers();
}

int Adapter::start() {
  if (auto error = validate(config_)) {
    fmt::print(stderr, "{}: {}\n", program_, *error);
    return 2;
  }
  // Signals are taken by the loop alone: blocked before any thread starts
  // (the service's client's own, and the workers), which inherit the mask.
  sockets_.open();
  sockets_.watch(events_.fd(), workers_key);

  // The service must answer before anyone is served.
  if (auto error = service_.start()) {
    fmt::print(stderr, "{}: {}\n", program_, *error);
    return 2;
  }

  auto error = sockets_.bind(config_.host, config_.port);
  if (!error) error = sockets_.listen(config_.host, config_.port);
  if (error) {
    fmt::print(stderr, "{}: {}\n", program_, *error);
    return 2;
  }
  if (!config_.quiet) {
    const auto& l = config_.limits;
    fmt::print(stderr,
               "{}: on {}:{}, {} (max_lease_ms={} max_wait_ms={} max_line_bytes={} max_waiters_per_key={} "
               "max_waiters={} max_in_flight={} max_connections={} session_window={} session_clients_max={})\n",
               program_, config_.host, config_.port, service_.describe(), l.max_lease_ms.value, l.max_wait_ms.value, l.max_line_bytes, l.max_waiters_per_key, l.max_waiters,
               config_.max_in_flight, config_.max_connections, config_.sessions.window, config_.sessions.clients_max);
  }
  return 0;
}

int Adapter::run() {
  if (const int code = start(); code != 0) return code;
  std::vector<epoll_event> events;
  while (!stop_) {
    const int ready = wait(events, backlog() ? 0 : -1);
    if (ready < 0) {
      fmt::print(stderr, "{}: epoll_wait: {}\n", program_, std::strerror(errno));
      return 2;
    }
    for (int i = 0; i < ready; ++i) {
      const auto& event = events[static_cast<std::size_t>(i)];
      if (event.data.u64 == LoopSockets::signal_key) {
        signalfd_siginfo info{};
        while (::read(sockets_.signal_fd(), &info, sizeof info) == sizeof info) stop_ = true;
      } else if (event.data.u64 == workers_key) {
        for (auto& worker_event : events_.take_all()) on_worker_event(worker_event);
      } else {
        // A client's EOF or error: the lines already received are still handled.
        listener_or_client_event(event, config_.max_connections, config_.limits.max_line_bytes,
                                 [this](Connection& c) { end_input(c); });
      }
    }
    end_turn([this](Connection& c) { handle_lines(c); }, [this](Connection& c) { close_connection(c); });
  }
  stop_workers();
  if (!config_.quiet) {
    fmt::print(stderr,
               "{}: stopped ({} connections accepted, {} refused at the limit, {} closed for not reading, {} lines, "
               "{} grants, {} waiters the service dropped, {})\n",
               program_, counts_.accepted, counts_.refused, slow_closed_, lines_, granted_, lost_, service_.figures());
  }
  return 0;
}

// Every worker ends: failed calls are not made again, waiting acquires are
// cancelled (each leaves the service's queue, or keeps the key if it holds
// it by then), and events posted after the queue closed are dropped.
void Adapter::stop_workers() {
  service_.stop();
  for (auto& [id, request] : requests_) request.cancel->cancel();
  events_.close();
  for (auto& [id, request] : requests_) {
    if (request.worker.joinable()) request.worker.join();
  }
  requests_.clear();
}

// ---- workers ------------------------------------------------------------------

void Adapter::dispatch(Connection& c, const SessionRequest& parsed) {
  const std::uint64_t id = next_request_++;
  Request& request = requests_[id];
  request.answer_to = c.id;
  request.sent_on = c.id;
  if (parsed.session) request.session = cluster::Session{std::string(parsed.session->client), parsed.session->sequence};
  request.acquire = std::holds_alternative<AcquireRequest>(parsed.request);
  ++c.answers_owed;
  c.unplaced = id;
  const auto post = [this](WorkerEvent event) { events_.push(std::move(event), worker_event_bytes); };
  if (const auto* acquire = std::get_if<AcquireRequest>(&parsed.request)) {
    AcquireAsk ask{std::string(acquire->key), std::string(acquire->owner), acquire->lease_ms.value,
                   acquire->wait_ms.value};
    // Lines read after the client's EOF: it will not hear a waiter's answer.
    if (!c.reading) request.cancel->cancel();
    request.worker = std::thread([this, id, ask = std::move(ask), cancel = request.cancel, post] {
      const auto outcome = service_.acquire(ask, slots_, *cancel, [&] { post(Placed{id}); });
      Finished finished{id, std::nullopt, false};
      switch (outcome.kind) {
        case AcquireOutcome::Kind::granted:
          finished.response = Response::granted(Token{outcome.token}, ask.owner, ask.key);
          break;
        case AcquireOutcome::Kind::timed_out:
          finished.response = Response::timed_out(ask.owner, ask.key);
          break;
        case AcquireOutcome::Kind::busy:
          finished.response = Response::busy(ask.owner, ask.key);
          break;
        case AcquireOutcome::Kind::dropped:
          finished.response = Response::timed_out(ask.owner, ask.key);
          finished.dropped = true;
          break;
        case AcquireOutcome::Kind::lost:
          finished.response = Response::timed_out(ask.owner, ask.key);  // what a retry hears, as for dropped
          finished.dropped = true;
          finished.lost = true;
          break;
        case AcquireOutcome::Kind::abandoned:
          break;
      }
      post(finished);
    });
  } else {
    const auto& release = std::get<ReleaseRequest>(parsed.request);
    request.worker = std::thread([this, id, key = std::string(release.key), token = release.token, post] {
      const auto outcome = service_.release(key, token.value);
      post(Placed{id});
      Finished finished{id, std::nullopt, false};
      if (outcome.kind == ReleaseOutcome::Kind::released) finished.response = Response::released(token, key);
      if (outcome.kind == ReleaseOutcome::Kind::not_held) finished.response = Response::not_held(token, key);
      finished.lost = outcome.kind == ReleaseOutcome::Kind::lost;
      post(finished);
    });
  }
}

void Adapter::on_worker_event(WorkerEvent& event) {
  if (const auto* placed = std::get_if<Placed>(&event)) {
    const auto found = requests_.find(placed->request);
    if (found == requests_.end()) return;
    const auto connection = connections_.find(found->second.sent_on);
    if (connection != connections_.end() && connection->second->unplaced == placed->request) {
      connection->second->unplaced.reset();
    }
    return;
  }
  auto& finished = std::get<Finished>(event);
  const auto found = requests_.find(finished.request);
  if (found == requests_.end()) return;
  Request& request = found->second;
  if (request.worker.joinable()) request.worker.join();  // it posted its last event: it is ending
  if (finished.lost && !request.session.anonymous()) {
    // The service holds no trace of it: a retry is carried out afresh
    // (marked by waiter 0, which no request is).
    sessions_.settle_waiter(request.session, cluster::WaiterId{finished.request},
                            cluster::Outcome{cluster::Outcome::Kind::queued, {}, cluster::WaiterId{0}});
  } else if (finished.response && !request.session.anonymous()) {
    sessions_.settle_waiter(request.session, cluster::WaiterId{finished.request},
                            cluster::Outcome{finished.dropped ? cluster::Outcome::Kind::dropped
                                                              : cluster::Outcome::Kind::answered,
                                             *finished.response, {}});
  }
  if (finished.response && finished.response->kind == ResponseKind::granted) ++granted_;
  if (request.answer_to) {
    if (const auto connection = connections_.find(*request.answer_to); connection != connections_.end()) {
      --connection->second->answers_owed;
    }
  }
  if (finished.lost && request.answer_to) {
    // Neither A nor T is true of it: its connection is closed unanswered,
    // and the client may retry with its session (it then hears T).
    if (const auto connection = connections_.find(*request.answer_to); connection != connections_.end()) {
      ++lost_;
      connection->second->aborted = true;
      connection->second->discarding = true;
      end_input(*connection->second);
    }
  } else if (finished.response) {
    // A dropped waiter left with its connection, unanswered; its T goes only
    // to a retry with its session, on a connection still read.
    const auto to = connections_.find(request.answer_to.value_or(ConnectionId{0}));
    if (!finished.dropped || (to != connections_.end() && to->second->reading)) {
      answer(request.answer_to, *finished.response);
    }
  }
  if (const auto connection = connections_.find(request.sent_on); connection != connections_.end()) {
    if (connection->second->unplaced == finished.request) connection->second->unplaced.reset();
  }
  requests_.erase(found);
}

void Adapter::answer(std::optional<ConnectionId> to, const Response& response) {
  if (!to) return;
  const auto found = connections_.find(*to);
  if (found == connections_.end() || found->second->slow) return;
  Connection& c = *found->second;
  append_response_line(response, c.output);
  if (c.pending_output() > config_.max_output_bytes) {
    // A client that does not read: closed before it can make the adapter hold more.
    c.slow = true;
    ++slow_closed_;
  }
}

// ---- clients ------------------------------------------------------------------

void Adapter::handle_lines(Connection& c) {
  for (std::uint64_t handled = 0; handled < config_.lines_per_turn && c.has_work(); ++handled) {
    const auto line = c.framer.next_line();
    ++lines_;
    if (line->size() > config_.limits.max_line_bytes) {
      overlong(c);  // it came whole in one read: the framer holds it as a complete line
      break;
    }
    handle_line(c, *line);
  }
  if (!c.discarding && c.framer.overlong() && !c.framer.has_complete_line() && !c.unplaced) overlong(c);
}

// A line past the limit: E, then the connection closes (docs/protocol.md, "Responses").
void Adapter::overlong(Connection& c) {
  answer(c.id, Response::error(fmt::format("line longer than {} bytes", config_.limits.max_line_bytes)));
  c.discarding = true;
  end_input(c);
}

void Adapter::handle_line(Connection& c, std::string_view line) {
  const auto parsed = parse_session_request(line, config_.limits);
  if (const auto* malformed = std::get_if<Malformed>(&parsed)) {
    answer(c.id, Response::error(malformed->reason));
    return;
  }
  const auto& request = std::get<SessionRequest>(parsed);
  std::optional<cluster::Session> session;
  if (request.session) {
    session = cluster::Session{std::string(request.session->client), request.session->sequence};
    switch (sessions_.standing(*session, cluster::request_digest(request.request))) {
      case cluster::SessionTable::Standing::stale:
        answer(c.id, Response::error("stale request"));
        return;
      case cluster::SessionTable::Standing::reused:
        // Another request under a number already taken: refused, never told
        // the other's outcome (docs/protocol.md, "Cluster nodes on the wire").
        answer(c.id, Response::error(cluster::reused_reason));
        return;
      case cluster::SessionTable::Standing::retry: {
        // Taken before: never again. Its outcome, or its answer to come.
        const cluster::Outcome& outcome = *sessions_.find(*session);
        if (outcome.kind == cluster::Outcome::Kind::queued && outcome.waiter.value == 0) break;  // lost: afresh
        sessions_.touch(session->client, ++session_uses_);
        if (outcome.kind != cluster::Outcome::Kind::queued) {
          answer(c.id, outcome.response);
          return;
        }
        const auto waiting = requests_.find(outcome.waiter.value);
        if (waiting == requests_.end()) return;  // the adapter is stopping
        if (waiting->second.answer_to) {
          if (const auto old = connections_.find(*waiting->second.answer_to); old != connections_.end()) {
            --old->second->answers_owed;
          }
        }
        waiting->second.answer_to = c.id;
        ++c.answers_owed;
        return;
      }
      case cluster::SessionTable::Standing::fresh:
        break;
    }
  }
  if (requests_.size() >= config_.max_in_flight) {
    answer(c.id, Response::error("too many requests in flight"));
    return;
  }
  if (session) {
    sessions_.record(*session,
                     cluster::Outcome{cluster::Outcome::Kind::queued, {}, cluster::WaiterId{next_request_},
                                      cluster::request_digest(request.request)},
                     ++session_uses_);
  }
  dispatch(c, request);
}

// No more input from `c`: its waiting acquires leave the service's queue, silently
// (simple mode point 10; one granted meanwhile keeps its grant and is
// answered); the answers owed to it are still written.
void Adapter::end_input(Connection& c) {
  c.reading = false;
  for (auto& [id, request] : requests_) {
    if (request.acquire && request.answer_to == c.id) request.cancel->cancel();
  }
  set_interest(c);
}

void Adapter::close_connection(Connection& c) {
  const ConnectionId id = c.id;
  // Its waiting acquires leave the queue; answers still to come go nowhere.
  for (auto& [request_id, request] : requests_) {
    if (request.answer_to != id) continue;
    if (request.acquire) request.cancel->cancel();
    request.answer_to.reset();
  }
  drop(c);
}

}  // namespace

std::optional<std::string> validate(const LineAdapterConfig& config) {
  if (auto error = lockstep::validate(config.limits)) return error;
  in_addr address{};
  if (inet_pton(AF_INET, config.host.c_str(), &address) != 1) {
    return fmt::format("--host '{}' is not an IPv4 address", config.host);
  }
  if (auto sessions = cluster::validate(config.sessions)) return *sessions;
  if (config.max_in_flight < 1 || config.max_in_flight > 100'000) return "--max-in-flight must be in 1..100000";
  if (config.limits.max_waiters > config.max_in_flight) {
    return "--max-waiters must be at most --max-in-flight: each waiting acquire is a request in flight";
  }
  if (config.max_connections < 1 || config.max_connections > 100'000) return "--max-connections must be in 1..100000";
  if (config.max_output_bytes < 1'024 || config.max_output_bytes > (std::uint64_t{1} << 32)) {
    return "--max-output-bytes must be in 1024..4294967296";
  }
  if (config.lines_per_turn < 1 || config.lines_per_turn > 1'000'000) return "--lines-per-turn must be in 1..1000000";
  return std::nullopt;
}

int run_line_adapter(std::string_view program, const LineAdapterConfig& config, LockService& service) {
  Adapter adapter(program, config, service);
  return adapter.run();
}

}  // namespace lockstep::adapters
