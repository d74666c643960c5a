// The pieces of a virtual network. A FifoChannel is one direction of one
// simple-mode client connection: it delivers in the order sent, as TCP does,
// after a delay drawn from a LatencyModel. A message never overtakes an
// earlier one on its channel, so its delivery time is max(sent + latency,
// previous delivery). The Raft harness draws each node-to-node message's
// delay on its own, so those overtake each other, and cluster mode's
// clients do the same on theirs (sim/raft/harness.hpp,
// sim/cluster/workload.hpp). In every mode, payloads wait in a bounded
// InFlightPool while in flight, and the delivery event names its slot.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "impl/assert.hpp"
#include "impl/prng.hpp"
#include "impl/units.hpp"

namespace lockstep::sim {

enum class LatencyShape {
  uniform,    // every delay in [min, max] equally likely
  long_tail,  // most delays near min, a few near max
};

struct LatencyModel {
  DurationMs min_ms{0};
  DurationMs max_ms{5};
  LatencyShape shape = LatencyShape::uniform;

  DurationMs sample(Prng& prng) const {
    const auto spread = max_ms.value - min_ms.value;
    if (spread <= 0) return min_ms;
    if (shape == LatencyShape::uniform) return DurationMs{prng.between(min_ms.value, max_ms.value)};
    const double u = prng.unit();
    return DurationMs{min_ms.value + static_cast<std::int64_t>(std::floor(u * u * u * static_cast<double>(spread + 1)))};
  }
};

// One direction of a link: FIFO delivery.
class FifoChannel {
 public:
  TimeMs delivery_time(TimeMs now, DurationMs latency) {
    last_delivery_ = std::max(now + latency, last_delivery_);
    return last_delivery_;
  }

 private:
  TimeMs last_delivery_{0};
};

// Payloads in flight, addressed by index; released slots are reused.
template <class Payload>
class InFlightPool {
 public:
  explicit InFlightPool(std::size_t in_flight_max) : in_flight_max_(in_flight_max) {}

  std::uint32_t put(Payload payload) {
    LOCKSTEP_ASSERT(live_ < in_flight_max_);
    ++live_;
    if (!free_.empty()) {
      const auto index = free_.back();
      free_.pop_back();
      items_[index] = std::move(payload);
      return index;
    }
    items_.push_back(std::move(payload));
    return static_cast<std::uint32_t>(items_.size() - 1);
  }

  Payload take(std::uint32_t index) {
    LOCKSTEP_ASSERT(index < items_.size());
    --live_;
    free_.push_back(index);
    return std::move(items_[index]);
  }

  std::size_t live() const { return live_; }

 private:
  std::vector<Payload> items_;
  std::vector<std::uint32_t> free_;
  std::size_t live_ = 0;
  std::size_t in_flight_max_;
};

}  // namespace lockstep::sim
