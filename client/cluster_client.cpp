#include "client/cluster_client.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "impl/decimal.hpp"

namespace lockstep::client {

namespace {

using std::chrono::milliseconds;

constexpr std::string_view not_leader = "not-leader";

int poll_ms(ClusterClient::Clock::time_point now, ClusterClient::Clock::time_point until) {
  if (until <= now) return 0;
  const auto left = std::chrono::ceil<milliseconds>(until - now).count();
  return static_cast<int>(std::min<std::int64_t>(left, 60'000));
}

}  // namespace

std::optional<NodeAddress> parse_node_address(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const auto port = parse_decimal(text.substr(colon + 1));
  if (!port || *port == 0 || *port > 65535) return std::nullopt;
  NodeAddress address{std::string(text.substr(0, colon)), static_cast<std::uint16_t>(*port)};
  in_addr parsed{};
  if (inet_pton(AF_INET, address.host.c_str(), &parsed) != 1) return std::nullopt;
  return address;
}

std::string make_client_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
  std::string name;
  for (const char* c = host; *c != '\0' && name.size() < 64; ++c) {
    if (*c > ' ' && *c <= '~') name.push_back(*c);
  }
  if (name.empty()) name = "host";
  std::random_device random;
  const std::uint64_t bits = (std::uint64_t{random()} << 32) ^ random();
  return fmt::format("{}-{}-{:016x}", name, ::getpid(), bits);
}

namespace {

// The id file's contents: `<id> <next number not reserved>`.
struct KeptId {
  std::string id;
  std::uint64_t reserved_until = 1;
};

std::optional<KeptId> read_id_file(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return std::nullopt;
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read the client id file {}: {}", path, std::strerror(errno)));
  std::string id, number, extra;
  in >> id >> number >> extra;
  const auto parsed = parse_decimal(number);
  if (!is_valid_name(id) || !parsed || *parsed < 1 || *parsed > sequence_max || !extra.empty()) {
    throw std::runtime_error(fmt::format("the client id file {} does not hold `<client id> <next sequence number>`", path));
  }
  return KeptId{id, *parsed};
}

// Written whole to a file beside it, flushed, then renamed over it: a crash
// leaves the old contents or the new, never a mix.
void write_id_file(const std::string& path, const KeptId& kept) {
  const std::string temporary = path + ".new";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << kept.id << ' ' << kept.reserved_until << '\n';
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("cannot write the client id file {}", temporary));
  }
  if (const int fd = ::open(temporary.c_str(), O_WRONLY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw std::runtime_error(fmt::format("cannot write the client id file {}: {}", path, std::strerror(errno)));
  }
}

}  // namespace

ClusterClient::ClusterClient(Options options) : options_(std::move(options)) {
  if (options_.nodes.empty()) throw std::invalid_argument("a cluster client needs at least one node");
  if (!options_.client_id.empty() && !options_.client_id_file.empty()) {
    throw std::invalid_argument("give a client id or a client id file, not both");
  }
  if (!options_.client_id_file.empty()) {
    // Every number an earlier run reserved may have been used: start above.
    const auto kept = read_id_file(options_.client_id_file);
    options_.client_id = kept ? kept->id : make_client_id();
    next_sequence_ = kept ? kept->reserved_until : 1;
    reserved_until_ = next_sequence_;
    if (!kept) write_id_file(options_.client_id_file, KeptId{options_.client_id, reserved_until_});
  } else if (options_.client_id.empty()) {
    options_.client_id = make_client_id();
  }
  if (!is_valid_name(options_.client_id)) {
    throw std::invalid_argument("the client id must be 1 to 250 printable bytes without space");
  }
  if (options_.patience.count() < 0) throw std::invalid_argument("patience must not be negative");
  // Clients spread over the nodes from the start, by their id.
  std::size_t hash = 0;
  for (const char c : options_.client_id) hash = hash * 31 + static_cast<unsigned char>(c);
  node_ = hash % options_.nodes.size();
  backoff_ = options_.backoff_min;
}

ClusterClient::~ClusterClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t ClusterClient::acquire(std::string_view key, std::string_view owner, std::int64_t lease_ms,
                                     std::int64_t wait_ms, Callback done) {
  Request request;
  request.sequence = take_sequence();
  request.key = key;
  request.owner = owner;
  request.lease_ms = lease_ms;
  request.wait_ms = wait_ms;
  request.done = std::move(done);
  queue_.push_back(std::move(request));
  ++stats_.requests;
  return queue_.back().sequence;
}

std::uint64_t ClusterClient::release(std::string_view key, Token token, Callback done) {
  Request request;
  request.sequence = take_sequence();
  request.acquire = false;
  request.key = key;
  request.token = token;
  request.done = std::move(done);
  queue_.push_back(std::move(request));
  ++stats_.requests;
  return queue_.back().sequence;
}

std::uint64_t ClusterClient::take_sequence() {
  if (!options_.client_id_file.empty() && next_sequence_ >= reserved_until_) {
    reserved_until_ = std::min(next_sequence_ + id_file_block, sequence_max + 1);
    if (next_sequence_ > sequence_max) throw std::runtime_error("the client's sequence numbers ran out");
    write_id_file(options_.client_id_file, KeptId{options_.client_id, reserved_until_});
  }
  return next_sequence_++;
}

std::string ClusterClient::request_line(const Request& r) const {
  if (r.acquire) {
    return fmt::format("A {} {} {} {} {} {}\n", r.key, r.owner, r.lease_ms, r.wait_ms, options_.client_id, r.sequence);
  }
  return fmt::format("R {} {} {} {}\n", r.key, r.token.value, options_.client_id, r.sequence);
}

bool ClusterClient::connect_to(const NodeAddress& node) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(node.port);
  if (inet_pton(AF_INET, node.host.c_str(), &address.sin_addr) != 1) return false;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (errno != EINPROGRESS) {
      ::close(fd);
      return false;
    }
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof error;
    if (::poll(&p, 1, static_cast<int>(options_.connect_timeout.count())) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
      ::close(fd);
      return false;
    }
  }
  const int yes = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  fd_ = fd;
  framer_ = LineFramer{1 << 16};
  output_.clear();
  tell(Wire::connected);
  return true;
}

void ClusterClient::disconnect(bool lost) {
  if (fd_ >= 0) {
    ::close(fd_);
    tell(lost ? Wire::lost : Wire::closed);
  }
  fd_ = -1;
  output_.clear();
  on_wire_ = false;
}

void ClusterClient::advance(Clock::time_point now) {
  if (queue_.empty() || on_wire_ || now < resume_at_) return;
  if (fd_ < 0) {
    if (!connect_to(options_.nodes[node_])) {
      // Counts as an attempt, and its time as the request's.
      auto& head = queue_.front();
      ++head.attempts;
      ++stats_.attempts;
      if (head.attempts == 1) head.first_sent = now;
      retry(now, std::nullopt);
      return;
    }
    ++stats_.reconnects;
  }
  auto& head = queue_.front();
  ++head.attempts;
  ++stats_.attempts;
  // Read before the first byte is written, so that it is never later than
  // any instant at which a node can have read the request: a checker that
  // counts a wait or a lease from it never judges a node early because this
  // thread was descheduled between the write and the clock.
  if (head.attempts == 1) head.first_sent = Clock::now();
  const auto line = request_line(head);
  tell(Wire::sent, std::string_view(line).substr(0, line.size() - 1));
  output_ += line;
  while (!output_.empty()) {
    const auto wrote = ::send(fd_, output_.data(), output_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (wrote < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;  // rest written by read_lines' poll
      ++stats_.connections_lost;
      disconnect(true);
      retry(now, std::nullopt);
      return;
    }
    output_.erase(0, static_cast<std::size_t>(wrote));
  }
  on_wire_ = true;
  deadline_ = Clock::now() + milliseconds{head.acquire ? head.wait_ms : 0} + options_.answer_timeout;
}

void ClusterClient::retry(Clock::time_point now, std::optional<NodeAddress> hint) {
  on_wire_ = false;
  auto& head = queue_.front();
  const auto wait = milliseconds{head.acquire ? head.wait_ms : 0};
  if (now >= head.first_sent + wait + options_.patience) {
    finish(Result::Kind::indeterminate, Response::error("no answer"), now);
    return;
  }
  // Where next: the leader named, else the next node in the list. A
  // redirect that names the node it came from is read as a bare
  // `E not-leader` (docs/protocol.md, "Cluster nodes on the wire"): that
  // node does not lead, whatever it names.
  std::optional<std::size_t> named;
  if (hint) {
    for (std::size_t i = 0; i < options_.nodes.size(); ++i) {
      if (options_.nodes[i] == *hint && i != node_) named = i;
    }
  }
  const std::size_t next = named ? *named : (node_ + 1) % options_.nodes.size();
  const bool to_named_leader = named.has_value();
  if (next != node_) {
    disconnect();
    node_ = next;
  }
  // A redirect to a leader that is known goes at once; anything else waits,
  // a little longer each time, so a cluster between leaders is not flooded.
  if (to_named_leader) {
    resume_at_ = now;
  } else {
    resume_at_ = now + backoff_;
    backoff_ = std::min(backoff_ * 2, options_.backoff_max);
  }
}

void ClusterClient::finish(Result::Kind kind, Response response, Clock::time_point now) {
  Request request = std::move(queue_.front());
  queue_.pop_front();
  on_wire_ = false;
  backoff_ = options_.backoff_min;
  resume_at_ = now;
  Result result;
  result.kind = kind;
  result.response = std::move(response);
  result.sequence = request.sequence;
  result.attempts = request.attempts;
  result.first_sent = request.first_sent;
  result.finished = now;
  if (kind == Result::Kind::answered) {
    ++stats_.answered;
  } else {
    ++stats_.indeterminate;
    // What the node will do with it is unknown: start afresh elsewhere.
    disconnect();
  }
  ++finished_;
  request.done(result);
}

bool ClusterClient::answers(const Response& r, const Request& request) const {
  switch (r.kind) {
    case ResponseKind::granted:
    case ResponseKind::timed_out:
    case ResponseKind::busy:
      return request.acquire && r.owner == request.owner && r.key == request.key;
    case ResponseKind::released:
    case ResponseKind::not_held:
      return !request.acquire && r.token == request.token && r.key == request.key;
    case ResponseKind::error:
      return true;  // sent at once, so for the request on the wire
  }
  return false;
}

void ClusterClient::on_line(std::string_view line, Clock::time_point now) {
  const auto response = parse_response(line);
  if (!response || queue_.empty() || !on_wire_ || !answers(*response, queue_.front())) {
    unexpected_.emplace_back(line);
    return;
  }
  if (response->kind == ResponseKind::error && response->reason.starts_with(not_leader)) {
    ++stats_.redirects;
    std::optional<NodeAddress> hint;
    if (response->reason.size() > not_leader.size() + 1) {
      hint = parse_node_address(std::string_view(response->reason).substr(not_leader.size() + 1));
    }
    retry(now, hint);
    return;
  }
  finish(Result::Kind::answered, *response, now);
}

void ClusterClient::read_lines(Clock::time_point now) {
  char chunk[16 * 1024];
  while (fd_ >= 0) {
    const auto got = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    if (got <= 0) {
      // Lost: the request on the wire is sent again elsewhere, same session.
      ++stats_.connections_lost;
      const bool had_request = on_wire_;
      disconnect(true);
      if (had_request) retry(now, std::nullopt);
      return;
    }
    // An answer's instant is read after the bytes are, never before: the
    // poll's clock may predate their arrival.
    const auto arrived = std::max(now, Clock::now());
    framer_.feed(std::string_view(chunk, static_cast<std::size_t>(got)));
    while (const auto line = framer_.next_line()) {
      tell(Wire::received, *line);
      on_line(*line, arrived);
    }
  }
}

ClusterClient::Clock::time_point ClusterClient::wake_at() const {
  if (queue_.empty()) return Clock::time_point::max();
  if (on_wire_) return deadline_;
  return resume_at_;
}

std::size_t ClusterClient::poll(std::chrono::milliseconds timeout) {
  ClusterClient* self = this;
  return poll_many(std::span<ClusterClient* const>(&self, 1), timeout);
}

std::size_t ClusterClient::poll_many(std::span<ClusterClient* const> clients, std::chrono::milliseconds timeout) {
  auto now = Clock::now();
  for (auto* c : clients) {
    c->finished_ = 0;
    c->advance(now);
  }
  std::vector<pollfd> descriptors;
  std::vector<ClusterClient*> owners;
  auto wake = now + timeout;
  for (auto* c : clients) {
    wake = std::min(wake, c->wake_at());
    if (c->fd_ < 0) continue;
    descriptors.push_back({c->fd_, static_cast<short>(POLLIN | (c->output_.empty() ? 0 : POLLOUT)), 0});
    owners.push_back(c);
  }
  if (descriptors.empty()) {
    if (wake > now) std::this_thread::sleep_for(wake - now);
  } else {
    ::poll(descriptors.data(), descriptors.size(), poll_ms(now, wake));
  }
  now = Clock::now();
  for (std::size_t i = 0; i < descriptors.size(); ++i) {
    auto* c = owners[i];
    if (c->fd_ != descriptors[i].fd) continue;
    if ((descriptors[i].revents & POLLOUT) && !c->output_.empty()) {
      const auto wrote = ::send(c->fd_, c->output_.data(), c->output_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (wrote > 0) c->output_.erase(0, static_cast<std::size_t>(wrote));
    }
    if (descriptors[i].revents & (POLLIN | POLLHUP | POLLERR)) c->read_lines(now);
  }
  std::size_t finished = 0;
  for (auto* c : clients) {
    if (c->on_wire_ && now >= c->deadline_) {
      // No answer in time: the node may be paused or cut off. Give up this
      // connection (a node closing it drops our waiter) and try elsewhere.
      ++c->stats_.timeouts;
      c->disconnect();
      c->retry(now, std::nullopt);
    }
    c->advance(now);
    finished += c->finished_;
  }
  return finished;
}

}  // namespace lockstep::client
