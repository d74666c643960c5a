#include "live/load.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "impl/prng.hpp"

namespace lockstep::live {

namespace {

using Clock = std::chrono::steady_clock;

class LockstepProtocol final : public LoadProtocol {
 public:
  std::string acquire(const std::string& key, const std::string& owner, std::int64_t lease_ms, std::int64_t wait_ms,
                      std::uint64_t) override {
    return fmt::format("A {} {} {} {}\n", key, owner, lease_ms, wait_ms);
  }
  std::string release(const std::string& key, const std::string& token) override {
    return fmt::format("R {} {}\n", key, token);
  }
  bool parse(std::string& input, Reply& reply) override {
    const auto newline = input.find('\n');
    if (newline == std::string::npos) return false;
    const std::string line = input.substr(0, newline);
    input.erase(0, newline + 1);
    reply = Reply{};
    // A <token> <owner> <key> | T <owner> <key> | B <owner> <key> | R/N <token> <key>
    const auto first = line.find(' ');
    const auto second = line.find(' ', first + 1);
    if (line[0] == 'E') {
      reply.error = line;
    } else if (line[0] == 'A') {
      reply.granted = true;
      reply.token = line.substr(first + 1, second - first - 1);
      reply.owner = line.substr(second + 1, line.find(' ', second + 1) - second - 1);
    } else if (line[0] == 'T' || line[0] == 'B') {
      reply.owner = line.substr(first + 1, second - first - 1);
    } else {
      reply.token = line.substr(first + 1, second - first - 1);
    }
    return true;
  }
  bool matches_by_owner() const override { return true; }
};

// Redis through hiredis: SET key value NX PX lease, and release by EVALSHA
// of a script that deletes the key only while it still holds the value
// (the usual compare-and-delete).
class RedisProtocol final : public LoadProtocol {
 public:
  explicit RedisProtocol(std::string sha) : sha_(std::move(sha)), reader_(redisReaderCreate()) {}
  ~RedisProtocol() override { redisReaderFree(reader_); }
  static std::string command(std::initializer_list<std::string> words) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& w : words) {
      argv.push_back(w.data());
      lengths.push_back(w.size());
    }
    char* bytes = nullptr;
    const auto length = redisFormatCommandArgv(&bytes, static_cast<int>(argv.size()), argv.data(), lengths.data());
    std::string result(bytes, static_cast<std::size_t>(length));
    redisFreeCommand(bytes);
    return result;
  }
  std::string acquire(const std::string& key, const std::string&, std::int64_t lease_ms, std::int64_t,
                      std::uint64_t nonce) override {
    return command({"SET", key, std::to_string(nonce), "NX", "PX", std::to_string(lease_ms)});
  }
  std::string release(const std::string& key, const std::string& token) override {
    return command({"EVALSHA", sha_, "1", key, token});
  }
  bool parse(std::string& input, Reply& reply) override {
    if (!input.empty()) {
      redisReaderFeed(reader_, input.data(), input.size());
      input.clear();
    }
    void* parsed = nullptr;
    if (redisReaderGetReply(reader_, &parsed) != REDIS_OK || parsed == nullptr) return false;
    auto* r = static_cast<redisReply*>(parsed);
    reply = Reply{};
    reply.granted = r->type == REDIS_REPLY_STATUS;  // +OK; a refused SET NX is nil
    freeReplyObject(r);
    return true;
  }
  bool matches_by_owner() const override { return false; }

 private:
  std::string sha_;
  redisReader* reader_;
};

struct Slot {
  std::string owner;
  std::string key;
  std::string token;  // set while holding: the next step releases
  std::string value;  // what this slot's last acquire asked Redis to store
  bool acquiring = true;
  Clock::time_point sent;
};

struct Conn {
  int fd = -1;
  std::string out;
  std::string in;
  std::vector<Slot> slots;
  std::deque<int> order;  // slots in send order, for in-order protocols
  std::map<std::string, int> by_owner;
};

// One load run: every connection keeps `depth` requests in flight, each
// slot acquiring a key and then releasing it, for the run's duration.
class LoadRun {
 public:
  LoadRun(const LoadConfig& config, LoadProtocol& protocol)
      : config_(config),
        protocol_(protocol),
        prng_(config.seed),
        key_count_(config.hot_keys > 0 ? config.hot_keys : config.keys),
        epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
        conns_(static_cast<std::size_t>(config.connections)) {}
  LoadRun(const LoadRun&) = delete;
  LoadRun& operator=(const LoadRun&) = delete;
  ~LoadRun() {
    for (auto& c : conns_) {
      if (c.fd >= 0) ::close(c.fd);
    }
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
  }

  LoadResult run() {
    if (epoll_fd_ < 0) return fail("cannot make an epoll instance");
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      if (!open(i)) return fail(fmt::format("cannot connect to {}:{}", config_.host, config_.port));
    }
    latencies_us_.reserve(1 << 22);
    const auto start = Clock::now();
    const auto stop_at = start + config_.duration;
    std::vector<epoll_event> events(256);
    for (auto& c : conns_) flush(c);
    while (Clock::now() < stop_at && result_.error.empty()) {
      const int ready = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 100);
      for (int e = 0; e < ready && result_.error.empty(); ++e) read_ready(conns_[events[static_cast<std::size_t>(e)].data.u64]);
    }
    if (!result_.error.empty()) return result_;
    result_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    percentiles();
    return result_;
  }

 private:
  LoadResult fail(std::string why) {
    result_.error = std::move(why);
    return result_;
  }

  // Connection i, connected, watched and with its first requests queued.
  bool open(std::size_t i) {
    Conn& c = conns_[i];
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(config_.port);
    inet_pton(AF_INET, config_.host.c_str(), &address.sin_addr);
    if (c.fd < 0 || ::connect(c.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return false;
    const int yes = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = i;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &event);
    for (int d = 0; d < config_.depth; ++d) {
      c.slots.push_back(Slot{fmt::format("c{}s{}", i, d), {}, {}, {}, true, {}});
      c.by_owner[c.slots.back().owner] = d;
      next_step(c, d);
    }
    return true;
  }

  // The slot's next request: the release of what it holds, or an acquire.
  void next_step(Conn& c, int index) {
    Slot& s = c.slots[static_cast<std::size_t>(index)];
    if (!s.token.empty()) {
      c.out += protocol_.release(s.key, s.token);
      s.acquiring = false;
    } else {
      s.key = fmt::format("key:{}", prng_.below(static_cast<std::uint64_t>(key_count_)));
      s.value = std::to_string(nonce_);
      c.out += protocol_.acquire(s.key, s.owner, config_.lease_ms, config_.wait_ms, nonce_++);
      s.acquiring = true;
    }
    s.sent = Clock::now();
    c.order.push_back(index);
  }

  static void flush(Conn& c) {
    if (c.out.empty()) return;
    [[maybe_unused]] const auto sent = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    c.out.clear();
  }

  void read_ready(Conn& c) {
    char chunk[64 * 1024];
    const auto got = ::recv(c.fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (got <= 0) {
      if (got == 0 || (errno != EAGAIN && errno != EINTR)) result_.error = "the server closed a connection";
      return;
    }
    c.in.append(chunk, static_cast<std::size_t>(got));
    LoadProtocol::Reply reply;
    const auto now = Clock::now();
    while (protocol_.parse(c.in, reply)) {
      if (!reply.error.empty()) {
        result_.error = fmt::format("the server answered `{}`", reply.error);
        return;
      }
      const auto index = answered_slot(c, reply);
      if (!index) {
        result_.error = "the server sent a reply that answers no request in flight";
        return;
      }
      on_reply(c, *index, reply, now);
    }
    flush(c);
  }

  // The slot a reply answers, taken off the connection's requests in flight.
  std::optional<int> answered_slot(Conn& c, const LoadProtocol::Reply& reply) const {
    const bool by_owner = protocol_.matches_by_owner();
    if (by_owner && !reply.owner.empty()) {
      const auto slot = c.by_owner.find(reply.owner);
      if (slot == c.by_owner.end() || std::find(c.order.begin(), c.order.end(), slot->second) == c.order.end()) {
        return std::nullopt;
      }
      std::erase(c.order, slot->second);
      return slot->second;
    }
    if (by_owner) {
      // R/N: the oldest slot that is releasing with this token.
      const auto found = std::find_if(c.order.begin(), c.order.end(), [&](int i) {
        const Slot& s = c.slots[static_cast<std::size_t>(i)];
        return !s.acquiring && s.token == reply.token;
      });
      if (found == c.order.end()) return std::nullopt;
      const int index = *found;
      c.order.erase(found);
      return index;
    }
    if (c.order.empty()) return std::nullopt;
    const int index = c.order.front();
    c.order.pop_front();
    return index;
  }

  void on_reply(Conn& c, int index, const LoadProtocol::Reply& reply, Clock::time_point now) {
    Slot& s = c.slots[static_cast<std::size_t>(index)];
    latencies_us_.push_back(
        static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - s.sent).count()));
    ++result_.operations;
    if (s.acquiring && reply.granted) {
      ++result_.grants;
      // Redis's token is the value this client chose.
      s.token = protocol_.matches_by_owner() ? reply.token : s.value;
    } else if (!s.acquiring) {
      s.token.clear();
    }
    next_step(c, index);
  }

  void percentiles() {
    if (latencies_us_.empty()) return;
    std::sort(latencies_us_.begin(), latencies_us_.end());
    const auto at = [&](double q) {
      const auto rank = static_cast<std::size_t>(q * static_cast<double>(latencies_us_.size()));
      return static_cast<double>(latencies_us_[std::min(latencies_us_.size() - 1, rank)]);
    };
    result_.p50_us = at(0.50);
    result_.p99_us = at(0.99);
    result_.p999_us = at(0.999);
  }

  const LoadConfig& config_;
  LoadProtocol& protocol_;
  SplitMix64 prng_;
  std::uint64_t nonce_ = 1;
  const int key_count_;
  const int epoll_fd_;
  std::vector<Conn> conns_;
  std::vector<std::uint32_t> latencies_us_;
  LoadResult result_;
};

}  // namespace

std::unique_ptr<LoadProtocol> lockstep_protocol() { return std::make_unique<LockstepProtocol>(); }
std::unique_ptr<LoadProtocol> redis_protocol(std::string sha) { return std::make_unique<RedisProtocol>(std::move(sha)); }

LoadResult run_load(const LoadConfig& config, LoadProtocol& protocol) { return LoadRun(config, protocol).run(); }

}  // namespace lockstep::live
