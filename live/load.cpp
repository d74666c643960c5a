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

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <hiredis/read.h>

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

std::uint64_t mix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::unique_ptr<LoadProtocol> lockstep_protocol() { return std::make_unique<LockstepProtocol>(); }
std::unique_ptr<LoadProtocol> redis_protocol(std::string sha) { return std::make_unique<RedisProtocol>(std::move(sha)); }

LoadResult run_load(const LoadConfig& config, LoadProtocol& protocol) {
  LoadResult result;
  std::uint64_t prng = config.seed;
  std::uint64_t nonce = 1;
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  std::vector<Conn> conns(static_cast<std::size_t>(config.connections));
  const auto key_count = config.hot_keys > 0 ? config.hot_keys : config.keys;
  const auto next_step = [&](Conn& c, int index) {
    Slot& s = c.slots[static_cast<std::size_t>(index)];
    if (!s.token.empty()) {
      c.out += protocol.release(s.key, s.token);
      s.acquiring = false;
    } else {
      s.key = fmt::format("key:{}", mix(prng) % static_cast<std::uint64_t>(key_count));
      s.value = std::to_string(nonce);
      c.out += protocol.acquire(s.key, s.owner, config.lease_ms, config.wait_ms, nonce++);
      s.acquiring = true;
    }
    s.sent = Clock::now();
    c.order.push_back(index);
  };
  for (std::size_t i = 0; i < conns.size(); ++i) {
    Conn& c = conns[i];
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(config.port);
    inet_pton(AF_INET, config.host.c_str(), &address.sin_addr);
    if (::connect(c.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      result.error = fmt::format("cannot connect to {}:{}", config.host, config.port);
      return result;
    }
    const int yes = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = i;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c.fd, &event);
    for (int d = 0; d < config.depth; ++d) {
      c.slots.push_back(Slot{fmt::format("c{}s{}", i, d), {}, {}, {}, true, {}});
      c.by_owner[c.slots.back().owner] = d;
      next_step(c, d);
    }
  }
  std::vector<std::uint32_t> latencies_us;
  latencies_us.reserve(1 << 22);
  const auto start = Clock::now();
  const auto stop_at = start + config.duration;
  std::vector<epoll_event> events(256);
  for (auto& c : conns) {
    [[maybe_unused]] const auto sent = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    c.out.clear();
  }
  while (Clock::now() < stop_at) {
    const int ready = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), 100);
    for (int e = 0; e < ready; ++e) {
      Conn& c = conns[events[static_cast<std::size_t>(e)].data.u64];
      char chunk[64 * 1024];
      const auto got = ::recv(c.fd, chunk, sizeof chunk, MSG_DONTWAIT);
      if (got <= 0) {
        if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
          result.error = "the server closed a connection";
          return result;
        }
        continue;
      }
      c.in.append(chunk, static_cast<std::size_t>(got));
      LoadProtocol::Reply reply;
      const auto now = Clock::now();
      while (protocol.parse(c.in, reply)) {
        if (!reply.error.empty()) {
          result.error = fmt::format("the server answered `{}`", reply.error);
          return result;
        }
        int index = -1;
        if (protocol.matches_by_owner() && !reply.owner.empty()) {
          index = c.by_owner.at(reply.owner);
          std::erase(c.order, index);
        } else if (protocol.matches_by_owner()) {
          // R/N: the oldest slot that is releasing with this token.
          const auto found = std::find_if(c.order.begin(), c.order.end(), [&](int i) {
            return !c.slots[static_cast<std::size_t>(i)].acquiring && c.slots[static_cast<std::size_t>(i)].token == reply.token;
          });
          index = *found;
          c.order.erase(found);
        } else {
          index = c.order.front();
          c.order.pop_front();
        }
        Slot& s = c.slots[static_cast<std::size_t>(index)];
        latencies_us.push_back(static_cast<std::uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(now - s.sent).count()));
        ++result.operations;
        if (s.acquiring && reply.granted) {
          ++result.grants;
          // Redis's token is the value this client chose.
          s.token = protocol.matches_by_owner() ? reply.token : s.value;
        } else if (!s.acquiring) {
          s.token.clear();
        }
        next_step(c, index);
      }
      if (!c.out.empty()) {
        [[maybe_unused]] const auto sent = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        c.out.clear();
      }
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& c : conns) ::close(c.fd);
  ::close(epoll_fd);
  if (!latencies_us.empty()) {
    std::sort(latencies_us.begin(), latencies_us.end());
    const auto at = [&](double q) {
      return static_cast<double>(latencies_us[std::min(latencies_us.size() - 1,
                                                       static_cast<std::size_t>(q * static_cast<double>(latencies_us.size())))]);
    };
    result.p50_us = at(0.50);
    result.p99_us = at(0.99);
    result.p999_us = at(0.999);
  }
  return result;
}

}  // namespace lockstep::live
