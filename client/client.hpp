// A client of the lock protocol over one TCP connection. Requests are
// pipelined: each is sent at once and gets a callback, called when its
// response arrives. Responses may come out of order; they are matched as
// the protocol says, by owner and key (A, T, B) and by token and key (R, N),
// the oldest pending match first. Single-threaded: poll() sends, receives
// and runs callbacks on the caller's thread.
//
//   lockstep::client::Client client;
//   client.connect("127.0.0.1", 7878);
//   client.acquire("printer", "alice", 30'000, 5'000, [&](const Response& r) {
//     if (r.kind == ResponseKind::granted) {
//       client.release("printer", r.token, [](const Response&) {});
//     }
//   });
//   while (client.in_flight() > 0) client.poll(std::chrono::seconds(1));
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "impl/line_framer.hpp"
#include "impl/protocol.hpp"

namespace lockstep::client {

class Client {
 public:
  using Callback = std::function<void(const Response&)>;

  Client() = default;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  // Connects (or reconnects: pending requests are failed first), retrying
  // until `patience` has passed.
  bool connect(const std::string& host, std::uint16_t port,
               std::chrono::milliseconds patience = std::chrono::seconds(5));
  bool connected() const { return fd_ >= 0; }
  void disconnect();

  void acquire(std::string_view key, std::string_view owner, std::int64_t lease_ms, std::int64_t wait_ms,
               Callback done);
  void release(std::string_view key, Token token, Callback done);
  // Sends a raw line; its answer goes to `done` as the oldest unmatched one.
  void send_raw(std::string_view line, Callback done);

  // Writes what is queued, reads what arrived and runs the callbacks of
  // matched responses, waiting up to `timeout` for something to arrive.
  // Returns how many responses were handled. A lost connection fails every
  // pending request with `E connection lost`.
  std::size_t poll(std::chrono::milliseconds timeout);

  std::size_t in_flight() const { return in_flight_; }
  // Responses that matched no pending request (a server bug, seen by tests).
  std::uint64_t unmatched() const { return unmatched_; }

 private:
  struct Pending {
    std::uint64_t order = 0;
    Callback done;
  };
  void track(std::map<std::pair<std::string, std::string>, std::deque<Pending>>& table,
             std::pair<std::string, std::string> match, Callback done);
  void deliver(const Response& response);
  void fail_all(const std::string& why);

  int fd_ = -1;
  std::string output_;
  LineFramer framer_{1 << 16};
  std::uint64_t next_order_ = 0;
  std::size_t in_flight_ = 0;
  std::uint64_t unmatched_ = 0;
  // (owner, key) -> pending acquires; (token, key) -> pending releases;
  // order -> raw lines. The order numbers say which pending request is oldest.
  std::map<std::pair<std::string, std::string>, std::deque<Pending>> acquires_;
  std::map<std::pair<std::string, std::string>, std::deque<Pending>> releases_;
  std::map<std::uint64_t, Callback> raw_;
};

}  // namespace lockstep::client
