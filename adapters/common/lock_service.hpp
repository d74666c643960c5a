// What an adapter (adapters/) asks of the lock service behind it: lockstep's
// two requests carried out with the service's own operations, each on a
// worker thread of the adapter's loop (line_adapter.hpp), which blocks on
// the service. Each adapter implements this for one service (etcd_lock/,
// redis_lock/); docs/testing-other-lock-services.md says what an
// implementation must translate and what it must not invent.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "adapters/common/waiting.hpp"

namespace lockstep::adapters {

struct AcquireAsk {
  std::string key;
  std::string owner;
  std::int64_t lease_ms = 1;
  std::int64_t wait_ms = 0;
};

struct AcquireOutcome {
  enum class Kind {
    granted,    // token: the service's
    timed_out,  // T: held, and the wait (maybe 0) is over
    busy,       // B: it would have waited past the adapter's waiter slots
    dropped,    // its connection closed while it waited; it left the queue
    lost,       // the service dropped it before it was told: no answer is true
    abandoned,  // the adapter stopped before the service answered
  };
  Kind kind = Kind::abandoned;
  std::uint64_t token = 0;
};

struct ReleaseOutcome {
  enum class Kind {
    released,
    not_held,
    lost,  // the service's answer was lost and what it did cannot be told: no answer is true
    abandoned,
  };
  Kind kind = Kind::abandoned;
};

class LockService {
 public:
  virtual ~LockService() = default;
  // Once, before anything is served: connects and checks that the service
  // answers. Why it cannot serve, or nothing.
  virtual std::optional<std::string> start() = 0;
  // The start-up line's words about the service (where it is, what it does
  // to leases).
  virtual std::string describe() const = 0;
  // `placed` is called once the request has its place in the service
  // (taken, queued, or refused), before it waits: the loop then hands this
  // connection's next request on, so a connection's requests take effect
  // in the order sent. A request that would wait takes a slot of `slots`
  // first, and is answered B when there is none.
  virtual AcquireOutcome acquire(const AcquireAsk& ask, WaiterSlots& slots, Cancellation& cancel,
                                 const std::function<void()>& placed) = 0;
  virtual ReleaseOutcome release(const std::string& key, std::uint64_t token) = 0;
  // From now on, failed calls are not made again: the adapter is stopping.
  virtual void stop() = 0;
  // The stop line's words about the service (calls made again, ...).
  virtual std::string figures() const = 0;
};

}  // namespace lockstep::adapters
