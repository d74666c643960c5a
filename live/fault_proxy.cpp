#include "live/fault_proxy.hpp"

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

#include <fmt/format.h>

#include "impl/assert.hpp"

namespace lockstep::live {

namespace {

// What one direction of one connection may hold before the relay stops
// reading its source (TCP's own flow control then slows the sender).
constexpr std::size_t queued_bytes_max = 4u << 20;
// The longest poll() sleeps, so that a delay's release is never missed by more.
constexpr int poll_ms_max = 20;

void no_delay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// Closed with a TCP reset rather than a FIN: what a peer sees of a link that
// broke.
void abort_socket(int fd) {
  linger hard{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  close(fd);
}

}  // namespace

std::unique_ptr<FaultProxy> FaultProxy::start(std::string& error) {
  std::unique_ptr<FaultProxy> proxy(new FaultProxy());
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    error = fmt::format("cannot make the relays' wake-up pipe: {}", std::strerror(errno));
    return nullptr;
  }
  proxy->wake_read_ = fds[0];
  proxy->wake_write_ = fds[1];
  proxy->thread_ = std::thread([raw = proxy.get()] { raw->loop(); });
  return proxy;
}

FaultProxy::~FaultProxy() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  for (auto& [id, c] : connections_) {
    if (c.client >= 0) close(c.client);
    if (c.server >= 0) close(c.server);
  }
  for (const auto& link : links_) close(link.listener);
  close(wake_read_);
  close(wake_write_);
}

std::optional<int> FaultProxy::add_link(std::uint16_t target_port, std::string& error) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener < 0) {
    error = fmt::format("cannot make a relay's socket: {}", std::strerror(errno));
    return std::nullopt;
  }
  auto address = loopback(0);  // a free port, chosen by the kernel
  socklen_t size = sizeof address;
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(listener, 128) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    error = fmt::format("cannot listen on a relay's port: {}", std::strerror(errno));
    close(listener);
    return std::nullopt;
  }
  std::lock_guard lock(mutex_);
  Link link;
  link.target_port = target_port;
  link.port = ntohs(address.sin_port);
  link.listener = listener;
  links_.push_back(link);
  wake();
  return static_cast<int>(links_.size()) - 1;
}

std::uint16_t FaultProxy::port(int link) const {
  std::lock_guard lock(mutex_);
  return links_.at(static_cast<std::size_t>(link)).port;
}

std::string FaultProxy::address(int link) const { return fmt::format("127.0.0.1:{}", port(link)); }

void FaultProxy::cut(int link_id, Direction direction) {
  std::lock_guard lock(mutex_);
  auto& link = links_.at(static_cast<std::size_t>(link_id));
  const bool up = direction != Direction::down, down = direction != Direction::up;
  link.cut_up = link.cut_up || up;
  link.cut_down = link.cut_down || down;
  // What was held for a delay is lost too: it had not crossed the link yet.
  for (auto& [id, c] : connections_) {
    if (c.link != link_id) continue;
    if (up) drop_queue(c.up);
    if (down) drop_queue(c.down);
  }
  wake();
}

void FaultProxy::slow(int link_id, Direction direction, std::chrono::milliseconds delay) {
  std::lock_guard lock(mutex_);
  auto& link = links_.at(static_cast<std::size_t>(link_id));
  if (direction != Direction::down) link.delay_up = delay;
  if (direction != Direction::up) link.delay_down = delay;
  wake();
}

void FaultProxy::heal(int link_id) {
  std::lock_guard lock(mutex_);
  auto& link = links_.at(static_cast<std::size_t>(link_id));
  link.cut_up = link.cut_down = false;
  link.delay_up = link.delay_down = std::chrono::milliseconds{0};
  std::vector<std::uint64_t> broken;
  for (const auto& [id, c] : connections_) {
    if (c.link == link_id && (c.up.lost || c.down.lost)) broken.push_back(id);
  }
  for (const auto id : broken) close_connection(id, true);
  wake();
}

void FaultProxy::reset(int link_id) {
  std::lock_guard lock(mutex_);
  std::vector<std::uint64_t> all;
  for (const auto& [id, c] : connections_) {
    if (c.link == link_id) all.push_back(id);
  }
  for (const auto id : all) close_connection(id, true);
  wake();
}

FaultProxy::LinkStats FaultProxy::stats(int link) const {
  std::lock_guard lock(mutex_);
  return links_.at(static_cast<std::size_t>(link)).stats;
}

void FaultProxy::wake() {
  const char byte = 1;
  [[maybe_unused]] const auto written = write(wake_write_, &byte, 1);  // a full pipe wakes the loop anyway
}

// What a flow's fields say of each other, checked after each read into it
// and each write from it (in O(1): a queue holds up to 4 MiB of chunks).
void FaultProxy::check_flow(const Flow& flow) {
  LOCKSTEP_ASSERT(flow.queue.empty() == (flow.queued_bytes == 0));
  LOCKSTEP_ASSERT(flow.queue.empty() || flow.queue.front().sent < flow.queue.front().bytes.size());
  LOCKSTEP_ASSERT(!flow.shut || (flow.eof && flow.queue.empty()));
}

void FaultProxy::drop_queue(Flow& flow) {
  if (flow.queued_bytes > 0) flow.lost = true;
  flow.queue.clear();
  flow.queued_bytes = 0;
}

// Called with the mutex held.
void FaultProxy::close_connection(std::uint64_t id, bool abort) {
  const auto found = connections_.find(id);
  if (found == connections_.end()) return;
  auto& c = found->second;
  auto& link = links_[static_cast<std::size_t>(c.link)];
  for (const int fd : {c.client, c.server}) {
    if (fd < 0) continue;
    if (abort) {
      abort_socket(fd);
    } else {
      close(fd);
    }
  }
  if (abort) ++link.stats.resets;
  --link.stats.open;
  connections_.erase(found);
}

void FaultProxy::accept_on(int link_id) {
  auto& link = links_[static_cast<std::size_t>(link_id)];
  while (true) {
    const int client = accept4(link.listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) return;  // EAGAIN, or a connection that went before it was taken
    const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (server < 0) {
      close(client);
      continue;
    }
    no_delay(client);
    no_delay(server);
    const auto target = loopback(link.target_port);
    if (connect(server, reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0 && errno != EINPROGRESS) {
      abort_socket(client);  // the target refuses: so does the relay
      close(server);
      continue;
    }
    Connection c;
    c.link = link_id;
    c.client = client;
    c.server = server;
    connections_.emplace(next_connection_++, std::move(c));
    ++link.stats.accepted;
    ++link.stats.open;
  }
}

bool FaultProxy::read_into(Connection& c, bool upward) {
  auto& link = links_[static_cast<std::size_t>(c.link)];
  auto& flow = upward ? c.up : c.down;
  const int from = upward ? c.client : c.server;
  char buffer[65536];
  const auto n = read(from, buffer, sizeof buffer);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  if (n == 0) {
    flow.eof = true;
    return true;
  }
  if (upward ? link.cut_up : link.cut_down) {
    flow.lost = true;
    link.stats.bytes_discarded += static_cast<std::uint64_t>(n);
    return true;
  }
  const auto delay = upward ? link.delay_up : link.delay_down;
  flow.queue.push_back(Chunk{Clock::now() + delay, std::string(buffer, static_cast<std::size_t>(n)), 0});
  flow.queued_bytes += static_cast<std::size_t>(n);
  check_flow(flow);
  return true;
}

bool FaultProxy::write_from(Connection& c, bool upward, Clock::time_point now) {
  auto& link = links_[static_cast<std::size_t>(c.link)];
  auto& flow = upward ? c.up : c.down;
  const int to = upward ? c.server : c.client;
  std::size_t done = 0;
  while (done < flow.queue.size() && flow.queue[done].release <= now) {
    auto& chunk = flow.queue[done];
    const auto n = send(to, chunk.bytes.data() + chunk.sent, chunk.bytes.size() - chunk.sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      return false;
    }
    chunk.sent += static_cast<std::size_t>(n);
    flow.queued_bytes -= static_cast<std::size_t>(n);
    link.stats.bytes_relayed += static_cast<std::uint64_t>(n);
    if (chunk.sent < chunk.bytes.size()) break;
    ++done;
  }
  flow.queue.erase(flow.queue.begin(), flow.queue.begin() + static_cast<std::ptrdiff_t>(done));
  if (flow.eof && flow.queue.empty() && !flow.shut) {
    shutdown(to, SHUT_WR);
    flow.shut = true;
  }
  check_flow(flow);
  return true;
}

// What one poll() watches: the wake-up pipe first, then every listener,
// then each connection's two sockets; and when it wakes at the latest.
struct FaultProxy::PollSet {
  struct Watched {
    std::uint64_t connection;  // 0: a listener (link in `link`) or the pipe (link -1)
    int link;
    bool client;
  };
  std::vector<pollfd> fds;
  std::vector<Watched> what;
  Clock::time_point now;
  Clock::time_point wake_at;

  void watch(int fd, short events, Watched watched) {
    fds.push_back({fd, events, 0});
    what.push_back(watched);
  }
  // Whether the destination of `flow` has something due now (bytes, or its
  // end); brings wake_at forward to the release of its next bytes.
  bool due(const Flow& flow) {
    if (flow.queue.empty()) return flow.eof && !flow.shut;
    wake_at = std::min(wake_at, flow.queue.front().release);
    return flow.queue.front().release <= now;
  }
  int wait_ms() const {
    return static_cast<int>(
        std::max<std::int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(wake_at - now).count()));
  }
};

void FaultProxy::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    auto set = watch_list();
    lock.unlock();
    poll(set.fds.data(), set.fds.size(), set.wait_ms());
    lock.lock();
    if (stopping_) break;
    if (set.fds[0].revents != 0) drain_wake_pipe();
    serve_ready(set);
  }
}

// What to wait for: the wake-up pipe, every listener, and per connection
// each source with room in its queue and each destination with bytes due.
FaultProxy::PollSet FaultProxy::watch_list() const {
  PollSet set;
  set.watch(wake_read_, POLLIN, {0, -1, false});
  for (std::size_t i = 0; i < links_.size(); ++i) set.watch(links_[i].listener, POLLIN, {0, static_cast<int>(i), false});
  set.now = Clock::now();
  set.wake_at = set.now + std::chrono::milliseconds{poll_ms_max};
  for (const auto& [id, c] : connections_) {
    short client_events = 0, server_events = 0;
    if (!c.up.eof && c.up.queued_bytes < queued_bytes_max) client_events |= POLLIN;
    if (!c.connecting && !c.down.eof && c.down.queued_bytes < queued_bytes_max) server_events |= POLLIN;
    if (set.due(c.down)) client_events |= POLLOUT;
    if (c.connecting || set.due(c.up)) server_events |= POLLOUT;
    set.watch(c.client, client_events, {id, c.link, true});
    set.watch(c.server, server_events, {id, c.link, false});
  }
  return set;
}

void FaultProxy::drain_wake_pipe() {
  char drain[256];
  while (read(wake_read_, drain, sizeof drain) > 0) {
  }
}

// Acts on what poll() found: new connections accepted, every socket read
// from and written to, and the connections that ended or broke closed.
void FaultProxy::serve_ready(const PollSet& set) {
  const auto then = Clock::now();
  std::vector<std::uint64_t> broken;
  for (std::size_t i = 1; i < set.fds.size(); ++i) {
    const auto& w = set.what[i];
    if (w.connection == 0) {
      if (set.fds[i].revents != 0) accept_on(w.link);
      continue;
    }
    const auto found = connections_.find(w.connection);
    // Closed meanwhile (a reset, a heal): its descriptors are not ours any more.
    if (found == connections_.end()) continue;
    auto& c = found->second;
    const bool keep = serve_socket(c, w.client, set.fds[i].revents, then);
    // Both ways ended and delivered: the connection is over.
    if (keep && c.up.shut && c.down.shut) {
      close_connection(w.connection, false);
      continue;
    }
    if (!keep) broken.push_back(w.connection);
  }
  // Held bytes whose delay ended since the poll began.
  for (auto& [id, c] : connections_) {
    if (c.connecting) continue;
    if (!write_from(c, true, then) || !write_from(c, false, then)) broken.push_back(id);
  }
  for (const auto id : broken) close_connection(id, true);
}

bool FaultProxy::serve_socket(Connection& c, bool client, short events, Clock::time_point now) {
  bool keep = true;
  if (!client && c.connecting && (events & (POLLOUT | POLLERR | POLLHUP)) != 0) {
    keep = finish_connect(c);
  } else if (!c.connecting || client) {
    if ((events & POLLIN) != 0) keep = read_into(c, client);
    if (keep && (events & (POLLERR | POLLNVAL)) != 0) keep = false;
    if (keep && (events & POLLHUP) != 0 && (events & POLLIN) == 0) (client ? c.up : c.down).eof = true;
  }
  if (keep && !c.connecting) keep = write_from(c, true, now) && write_from(c, false, now);
  return keep;
}

bool FaultProxy::finish_connect(Connection& c) {
  int error = 0;
  socklen_t size = sizeof error;
  getsockopt(c.server, SOL_SOCKET, SO_ERROR, &error, &size);
  if (error != 0) return false;
  c.connecting = false;
  return true;
}

}  // namespace lockstep::live
