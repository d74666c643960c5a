// Judges a lock service from its clients' side, from the responses alone
// (no model): the properties of docs/protocol.md, "Properties every layer is
// checked against", that a client can see.
//
// - tokens are unique and strictly increasing in the order they are seen;
// - never two live grants of one key (live: not released, lease not ended);
// - a deferred grant goes to the oldest queued request of its key (FIFO, on
//   the release path and through the sweep alike);
// - one sweep hands keys over in the order their holders' tokens were issued
//   (docs/protocol.md, simple mode point 8): of two hand-offs of expired,
//   unreleased grants at one instant, the older holder's gets the smaller
//   token;
// - nothing early: a T for a queued request comes exactly at its deadline, a
//   grant strictly before it; a try-lock is refused only while a grant of its
//   key is live;
// - every request is answered exactly once (a queued one unless its
//   connection closed); nothing arrives on a closed connection;
// - no limit is exceeded by what the clients can count (queued requests per
//   key and in all, keys held live).
//
// The driver reports, in order: on_request before the service handles a
// request, then each response the service sent (on_response), then
// end_request once the service is done with it; on_close when a connection
// closes; and on_time(now) once everything due up to `now` was delivered.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "impl/limits.hpp"
#include "impl/protocol.hpp"

namespace lockstep {

class ClientChecker {
 public:
  explicit ClientChecker(const Limits& limits);

  void on_request(TimeMs now, ConnectionId connection, const Request& request);
  void on_response(TimeMs now, const Outbound& response);
  void end_request(TimeMs now);
  void on_close(TimeMs now, ConnectionId connection);
  void on_time(TimeMs now);

  const std::vector<std::string>& violations() const { return violations_; }
  std::uint64_t responses_checked() const { return responses_checked_; }

 private:
  struct Queued {
    std::uint64_t order = 0;
    ConnectionId connection;
    std::string owner;
    std::string key;
    DurationMs lease_ms;
    TimeMs deadline;
  };
  struct Grant {
    Token token;
    TimeMs expiry;
    bool released = false;
  };
  struct Sent {
    TimeMs at;
    ConnectionId connection;
    bool acquire = true;
    std::string key;
    std::string owner;
    DurationMs lease_ms;
    DurationMs wait_ms;
    Token token;
    bool answered = false;
  };

  void violation(TimeMs now, std::string what);
  bool answers_sent(const Outbound& response) const;
  void on_immediate(TimeMs now, const Response& response);
  void on_deferred(TimeMs now, const Outbound& response);
  void on_grant(TimeMs now, const std::string& key, Token token, DurationMs lease_ms);
  bool live(const std::string& key, TimeMs now) const;
  std::size_t queued_on(const std::string& key) const;
  std::size_t live_keys(TimeMs now) const;

  // A hand-off by the sweep: the expired holder's token and the new one.
  struct SweepHandoff {
    std::string key;
    Token holder, granted;
  };
  void on_sweep_handoff(TimeMs now, const std::string& key, Token holder, Token granted);

  Limits limits_;
  std::optional<Sent> sent_;
  TimeMs sweep_instant_{-1};
  std::vector<SweepHandoff> sweep_handoffs_;  // at sweep_instant_
  std::deque<Queued> queued_;  // oldest first, all keys
  std::map<std::string, Grant> grants_;
  std::map<ConnectionId, bool> closed_;
  std::optional<Token> last_token_;
  std::uint64_t next_order_ = 0;
  std::uint64_t responses_checked_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace lockstep
