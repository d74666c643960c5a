// A client of a lock-service cluster (docs/protocol.md, "Cluster nodes on
// the wire"): it knows every node, sends each request with its session (client
// id and a sequence number it increases by one per new request), follows
// `E not-leader <host>:<port>` to the leader (or tries the next node when no
// leader is named), and when a connection is lost or an answer does not come
// in time it reconnects to the next node and sends the same request again,
// with the same session, so the cluster applies it at most once. A request
// that is still unanswered `patience` after its first attempt (beyond its
// wait) is reported indeterminate: it may have taken effect, or not.
//
// The client id must be unique to one client: a cluster answers a request
// whose (client id, number) it applied before from that request's outcome,
// or refuses it when it asks something else (docs/protocol.md, "Cluster
// nodes on the wire"). By default the client makes one up (host name,
// process id and 64 random bits), new for each ClusterClient. One that must
// stay the same across runs is kept in a file (`client_id_file`) with the
// numbers the client may have used, so that a run never reuses one.
//
// One request is on the wire at a time: the next waits for the answer to the
// one before it (a lock client waits for its lock anyway). So every line that
// arrives answers the request on the wire, or is unexpected: a line that
// answers no request (a second answer, another client's answer) is counted
// and kept for the caller, who judges the service by it.
//
// Single-threaded and driven by poll(), which connects, sends, reads and
// runs callbacks on the caller's thread; poll_many() drives several clients
// from one thread. Connecting waits at most `connect_timeout`.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "impl/counters.hpp"
#include "impl/line_framer.hpp"
#include "impl/protocol.hpp"

namespace lockstep::client {

struct NodeAddress {
  std::string host;  // IPv4
  std::uint16_t port = 0;
  friend bool operator==(const NodeAddress&, const NodeAddress&) = default;
};
// `host:port`, or nothing when it is not one.
std::optional<NodeAddress> parse_node_address(std::string_view text);

class ClusterClient {
 public:
  using Clock = std::chrono::steady_clock;

  // What happens on the client's connections, for a recorder of its view
  // (a history for the black-box checker): a connection opened, a line
  // about to be written (without its newline), a line read, a connection
  // the client closed, one the node closed or that broke.
  enum class Wire { connected, sent, received, closed, lost };
  using WireObserver = std::function<void(Wire, std::string_view line)>;

  struct Options {
    std::vector<NodeAddress> nodes;
    // 1 to 250 printable bytes without space, unique per client; empty: one
    // made up (make_client_id), or the one kept in client_id_file.
    std::string client_id = {};  // `= {}`: designated initializers may leave it out under -Wextra
    // A file that keeps the client id and the sequence numbers reserved so
    // far (`<id> <first number not yet reserved>`), created with a made-up
    // id when missing. Each run starts above every number an earlier run
    // may have used, reserving them a block at a time (the file is written
    // whole, flushed and renamed into place). Not with client_id; one
    // process at a time per file.
    std::string client_id_file = {};
    // How long an attempt waits for its answer, beyond the request's wait_ms.
    std::chrono::milliseconds answer_timeout{2'000};
    std::chrono::milliseconds connect_timeout{500};
    // Between attempts: doubling from min to max.
    std::chrono::milliseconds backoff_min{10};
    std::chrono::milliseconds backoff_max{500};
    // How long a request is tried, counted from its first attempt, beyond
    // its wait_ms, before it is reported indeterminate; an attempt on the
    // wire then still runs to its answer_timeout. A failover takes the
    // leader TTL (`serve --cluster --leader-ttl-s`, 5 s by default), a
    // campaign (up to 1 s) and the new leader's catching up: 4 to 4.5 s
    // after a SIGKILL of the leader on an idle machine. 30 s outlasts that
    // several times over, on a loaded machine and across two failovers.
    std::chrono::milliseconds patience{30'000};
    WireObserver on_wire = {};  // optional
  };

  struct Result {
    enum class Kind { answered, indeterminate };
    Kind kind = Kind::answered;
    Response response;  // answered
    std::uint64_t sequence = 0;
    std::uint32_t attempts = 0;
    // Bounds, for checkers that judge the cluster in real time: first_sent is
    // read just before the first attempt is written (no node can have read
    // it earlier), finished just after the answer is read (no node can have
    // sent it later), or when the request was given up.
    Clock::time_point first_sent;
    Clock::time_point finished;
  };
  using Callback = std::function<void(const Result&)>;

  struct Stats {
    std::uint64_t requests = 0, answered = 0, indeterminate = 0;
    std::uint64_t attempts = 0, redirects = 0, reconnects = 0, timeouts = 0, connections_lost = 0;
  };

  // Throws std::invalid_argument on no nodes, a client id that is not a
  // name, or both an id and a file; std::runtime_error when the id file
  // cannot be read, parsed or written.
  explicit ClusterClient(Options options);
  ~ClusterClient();
  ClusterClient(const ClusterClient&) = delete;
  ClusterClient& operator=(const ClusterClient&) = delete;

  // Queue a request; its callback runs once, from poll(). Returns its
  // sequence number.
  std::uint64_t acquire(std::string_view key, std::string_view owner, std::int64_t lease_ms, std::int64_t wait_ms,
                        Callback done);
  std::uint64_t release(std::string_view key, Token token, Callback done);

  // Does what can be done now and waits up to `timeout` for an answer.
  // Returns how many requests finished.
  std::size_t poll(std::chrono::milliseconds timeout);
  // The same for several clients at once, waiting on all of them together.
  static std::size_t poll_many(std::span<ClusterClient* const> clients, std::chrono::milliseconds timeout);

  std::size_t pending() const { return queue_.size(); }
  const Stats& stats() const { return stats_; }
  // Lines that answered no request, as received.
  const std::vector<std::string>& unexpected() const { return unexpected_; }
  const std::string& client_id() const { return options_.client_id; }
  // The node the client talks to now (or will try next).
  const NodeAddress& current_node() const { return options_.nodes[node_]; }

 private:
  struct Request {
    std::uint64_t sequence = 0;
    bool acquire = true;
    std::string key, owner;
    std::int64_t lease_ms = 0, wait_ms = 0;
    Token token;
    Callback done;
    std::uint32_t attempts = 0;
    Clock::time_point first_sent{};
  };

  // Sends the head request if it can; true when something changed.
  void advance(Clock::time_point now);
  bool connect_to(const NodeAddress& node);
  // `lost`: the node closed it or it broke (else the client gave it up).
  void disconnect(bool lost = false);
  void tell(Wire what, std::string_view line = {}) const {
    if (options_.on_wire) options_.on_wire(what, line);
  }
  void read_lines(Clock::time_point now);
  void on_line(std::string_view line, Clock::time_point now);
  // The head request failed this attempt: try again, elsewhere, after a
  // backoff, or give up on it.
  void retry(Clock::time_point now, std::optional<NodeAddress> hint);
  void finish(Result::Kind kind, Response response, Clock::time_point now);
  bool answers(const Response& response, const Request& request) const;
  std::string request_line(const Request& request) const;
  int fd() const { return fd_; }
  Clock::time_point wake_at() const;

  Options options_;
  std::deque<Request> queue_;
  // Takes the next sequence number, reserving a block in the id file first
  // when it runs out.
  std::uint64_t take_sequence();

  std::uint64_t next_sequence_ = 1;
  std::uint64_t reserved_until_ = 0;  // with an id file: numbers below it are reserved
  std::size_t node_ = 0;
  int fd_ = -1;
  std::string output_;
  LineFramer framer_{1 << 16};
  bool on_wire_ = false;                // the head request was sent on this connection
  Clock::time_point deadline_{};        // of the attempt on the wire
  Clock::time_point resume_at_{};       // backoff: no attempt before it
  std::chrono::milliseconds backoff_{0};
  std::size_t finished_ = 0;            // requests finished in the current poll
  std::vector<std::string> unexpected_;
  Stats stats_;
};

// A client id unique with a high probability: `<host>-<pid>-<16 hex digits>`
// (the host name reduced to the bytes a name may hold).
std::string make_client_id();

// How many sequence numbers an id file reserves at a time.
inline constexpr std::uint64_t id_file_block = 1'000;

// The client's counters, each once (impl/counters.hpp), for sums over clients.
inline constexpr std::array<Counter<ClusterClient::Stats>, 8> cluster_client_counters{{
    {"requests", &ClusterClient::Stats::requests},
    {"answered", &ClusterClient::Stats::answered},
    {"indeterminate", &ClusterClient::Stats::indeterminate},
    {"attempts", &ClusterClient::Stats::attempts},
    {"redirects", &ClusterClient::Stats::redirects},
    {"reconnects", &ClusterClient::Stats::reconnects},
    {"timeouts", &ClusterClient::Stats::timeouts},
    {"connections lost", &ClusterClient::Stats::connections_lost},
}};
static_assert(lists_every_counter(cluster_client_counters), "a counter of ClusterClient::Stats is missing");

}  // namespace lockstep::client
