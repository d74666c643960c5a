// Hands events from the etcd driver's threads to a single-threaded event
// loop: producers push from any thread; the loop polls fd() with its other
// descriptors and takes everything waiting at once. Bounded by bytes: a
// producer that would pass `bytes_max` waits until the loop has taken what
// is there (the watch then stops reading, and etcd holds the rest), so the
// queue never holds more than `bytes_max` plus one event.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace lockstep::etcd {

template <class Event>
class EventQueue {
 public:
  explicit EventQueue(std::size_t bytes_max) : bytes_max_(bytes_max) {
    fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("eventfd failed");
  }
  ~EventQueue() { ::close(fd_); }
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // Readable while events are waiting.
  int fd() const { return fd_; }

  // Adds `event`, which counts `bytes` against the bound; waits while the
  // queue is full. Returns false, and drops the event, once closed.
  bool push(Event event, std::size_t bytes) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return closed_ || bytes_ == 0 || bytes_ + bytes <= bytes_max_; });
    if (closed_) return false;
    events_.emplace_back(std::move(event), bytes);
    bytes_ += bytes;
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto written = ::write(fd_, &one, sizeof one);
    return true;
  }

  // Everything waiting, oldest first.
  std::vector<Event> take_all() {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto got = ::read(fd_, &count, sizeof count);
    std::deque<std::pair<Event, std::size_t>> taken;
    {
      std::lock_guard lock(mutex_);
      taken.swap(events_);
      bytes_ = 0;
    }
    room_.notify_all();
    std::vector<Event> events;
    events.reserve(taken.size());
    for (auto& [event, bytes] : taken) events.push_back(std::move(event));
    return events;
  }

  // Producers stop waiting and further pushes are dropped.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    room_.notify_all();
  }

 private:
  const std::size_t bytes_max_;
  int fd_ = -1;
  std::mutex mutex_;
  std::condition_variable room_;
  std::deque<std::pair<Event, std::size_t>> events_;
  std::size_t bytes_ = 0;
  bool closed_ = false;
};

}  // namespace lockstep::etcd
