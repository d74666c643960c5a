// What an adapter's worker threads share with its event loop while an
// acquire waits for its turn in the service: the bound on waiting acquires
// (per key and in all), and the cancellation of one acquire whose
// connection closed or whose adapter is stopping. Both are safe to use from
// any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace lockstep::adapters {

// The acquires of this adapter that wait in the service for their turn,
// counted per key and in all. The service may have no such bound; the
// adapter's threads and memory need one. A request that would wait past it
// is answered `B` (docs/protocol.md, simple mode point 5), and never waits.
class WaiterSlots {
 public:
  WaiterSlots(std::uint64_t per_key_max, std::uint64_t total_max) : per_key_max_(per_key_max), total_max_(total_max) {}

  // Takes a slot for one waiter of `key`, or says there is none.
  bool reserve(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto& count = per_key_[key];
    if (count >= per_key_max_ || total_ >= total_max_) {
      if (count == 0) per_key_.erase(key);
      return false;
    }
    ++count;
    ++total_;
    return true;
  }
  void release(const std::string& key) {
    std::lock_guard lock(mutex_);
    const auto found = per_key_.find(key);
    if (found == per_key_.end()) return;
    if (--found->second == 0) per_key_.erase(found);
    --total_;
  }
  std::uint64_t total() const {
    std::lock_guard lock(mutex_);
    return total_;
  }

 private:
  const std::uint64_t per_key_max_;
  const std::uint64_t total_max_;
  mutable std::mutex mutex_;
  std::map<std::string, std::uint64_t> per_key_;
  std::uint64_t total_ = 0;
};

// Asks one waiting acquire to stop waiting: its connection closed (simple
// mode point 10: its waiter leaves the queue) or the adapter is stopping.
// A worker that blocks on the service attaches what ends that block (a
// watch's cancel, a socket's shutdown); one that waits by the clock sleeps
// here, and is woken.
class Cancellation {
 public:
  void cancel() {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    if (interrupt_) interrupt_();
    woken_.notify_all();
  }
  bool cancelled() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }
  // The worker is about to block where `interrupt` ends it; false (and
  // nothing kept) when the acquire was cancelled already.
  bool attach(std::function<void()> interrupt) {
    std::lock_guard lock(mutex_);
    if (cancelled_) return false;
    interrupt_ = std::move(interrupt);
    return true;
  }
  void detach() {
    std::lock_guard lock(mutex_);
    interrupt_ = nullptr;
  }
  // Sleeps until `until`, or less if cancelled; true when cancelled.
  bool sleep_until(std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(mutex_);
    woken_.wait_until(lock, until, [this] { return cancelled_; });
    return cancelled_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable woken_;
  bool cancelled_ = false;
  std::function<void()> interrupt_;
};

}  // namespace lockstep::adapters
