// The simulator's event loop core: a priority queue of events ordered by
// (virtual time, sequence number). The sequence number is the order in which
// events were scheduled, so two events at one instant run in scheduling
// order: deterministic, and FIFO for messages sent one after the other.
// Generic over the payload: simple mode schedules its world's events
// (sim/simple/world.hpp), the Raft harness its own (deliveries, ticks,
// faults, restarts, and the events of the workload on top, which is the
// register in raft mode and the lock service's clients in cluster mode).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "impl/assert.hpp"
#include "impl/units.hpp"

namespace lockstep::sim {

template <class Payload>
class EventQueue {
 public:
  struct Entry {
    TimeMs at;
    std::uint64_t sequence = 0;
    Payload payload;
  };

  explicit EventQueue(std::size_t events_max) : events_max_(events_max) {
    heap_.reserve(std::min<std::size_t>(events_max, 1 << 16));
  }

  // Schedules `payload` at `at`, which is never before the current instant.
  void push(TimeMs at, Payload payload) {
    LOCKSTEP_ASSERT(at >= now_);
    LOCKSTEP_ASSERT(heap_.size() < events_max_);  // a limit on every queue
    heap_.push_back(Entry{at, next_sequence_++, payload});
    std::push_heap(heap_.begin(), heap_.end(), later);
  }

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  TimeMs next_time() const { return heap_.front().at; }
  TimeMs now() const { return now_; }

  // Removes the earliest event and moves the clock to its instant.
  Entry pop() {
    LOCKSTEP_ASSERT(!heap_.empty());
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Entry entry = heap_.back();
    heap_.pop_back();
    LOCKSTEP_ASSERT(entry.at >= now_);
    now_ = entry.at;
    return entry;
  }

 private:
  // std::*_heap keep the greatest element first; "greatest" here is earliest.
  static bool later(const Entry& a, const Entry& b) {
    if (a.at != b.at) return a.at > b.at;
    return a.sequence > b.sequence;
  }

  std::vector<Entry> heap_;
  std::size_t events_max_;
  std::uint64_t next_sequence_ = 0;
  TimeMs now_{0};
};

}  // namespace lockstep::sim
