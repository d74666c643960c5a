// lockstep's two requests carried out with etcd's own lock, as etcd's
// clientv3/concurrency.Mutex does it (a driver: blocking gRPC calls, run on
// the adapter's worker threads, one request per thread).
//
// Acquire `A <key> <owner> <lease_ms> <wait_ms>`:
// 1. grant an etcd lease of lease_ms rounded up to whole seconds (etcd
//    raises it to its minimum TTL if lower);
// 2. in one transaction, as Mutex.Lock: put `<prefix>/<key>/<lease hex>`
//    with that lease if it is absent, and read the key of lowest create
//    revision under `<prefix>/<key>/` (the holder). With a zero wait, or
//    when no waiter slot is left, the put is made only if nothing is under
//    the key's prefix (a try-lock that never queues, so a refused request
//    leaves no trace in etcd);
// 3. if the new key is the holder, the grant's token is its create
//    revision; the lease gets one keep-alive, so that its TTL counts from
//    the grant and not from the lease's creation, and then never another:
//    the hold ends when etcd's lessor expires the lease;
// 4. otherwise it waits, as Mutex.Lock's waitDeletes: watch the deletion of
//    the key created just before its own, again and again, until none is
//    left (it holds), keeping its lease alive while it waits;
// 5. at the end of wait_ms (counted from the put's answer), or when its
//    connection closed, one transaction decides: if its key is now the
//    lowest it holds (granted), else its key is deleted (T, or dropped).
//    The same transaction confirms a turn the watch announced. If its key
//    is gone (etcd ended its lease while keep-alives could not reach it, as
//    during a partition), it has left the queue and was never granted:
//    `lost`, which the adapter reports by closing the connection, as for
//    an answer it cannot give (its wait has not run out: `T` would be
//    early, and `A` a grant etcd never made).
//
// Release `R <key> <token>`: read the holder of `<prefix>/<key>/`; if its
// create revision is the token, delete it in a transaction that compares
// that create revision (R), and revoke its lease; anything else is N.
//
// Every step is idempotent (the put is conditional on the key's absence,
// the decision and the delete compare revisions), so a call that failed is
// made again, every `retry_pause`, until etcd answers or the adapter stops:
// an etcd that is slow or changes leader makes answers late, never wrong.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "adapters/common/lock_service.hpp"
#include "drivers/etcd/client.hpp"

namespace lockstep::etcd_lock {

struct MutexConfig {
  std::string prefix = "lockstep-etcd-lock";
  std::chrono::milliseconds call_timeout{5'000};
  std::chrono::milliseconds retry_pause{100};
};

using adapters::AcquireAsk;
using adapters::AcquireOutcome;
using adapters::Cancellation;
using adapters::ReleaseOutcome;
using adapters::WaiterSlots;

// etcd's lock for the adapter's loop (adapters/common/lock_service.hpp):
// granted tokens are create revisions; `lost` is a waiter whose key
// vanished (etcd ended its lease: the adapter's keep-alives, or its put,
// did not reach etcd within the TTL) before it was told.
class EtcdMutex {
 public:
  // `stopping` is the adapter's: once set, failed calls are not made again.
  EtcdMutex(etcd::Client& client, MutexConfig config, const std::atomic<bool>& stopping)
      : client_(client), config_(std::move(config)), stopping_(stopping) {}

  // `placed` is called once the request has its place in etcd (put, or
  // refused), before it waits: the event loop then hands this connection's
  // next request to etcd, so a connection's requests take effect in order.
  AcquireOutcome acquire(const AcquireAsk& ask, WaiterSlots& slots, Cancellation& cancel,
                         const std::function<void()>& placed);
  ReleaseOutcome release(const std::string& key, std::int64_t token);

  // etcd calls that failed and were made again, since the start.
  std::uint64_t calls_retried() const { return retried_.load(); }

 private:
  enum class Turn { holds, timed_out, dropped, lost, abandoned };
  enum class Decision { holds, left, lost };
  Turn wait_for_turn(const std::string& prefix, const std::string& my_key, std::int64_t my_rev, std::int64_t lease,
                     std::int64_t ttl_s, std::chrono::steady_clock::time_point deadline, Cancellation& cancel);
  // The transaction that decides a wait at one revision: its key holds, or
  // it is deleted (left), or it was gone already (lost). Nothing: stopped.
  std::optional<Decision> holds_or_leaves(const std::string& prefix, const std::string& my_key, std::int64_t my_rev);
  // The grant of `token`, once its lease restarted; lost if the lease is gone.
  AcquireOutcome granted(std::int64_t token, std::int64_t lease);
  // Restarts the lease's TTL; the TTL etcd reports (0: the lease is gone).
  std::int64_t refresh(std::int64_t lease);
  void revoke(std::int64_t lease);
  // Makes `call` until it succeeds (true) or the adapter stops (false).
  bool with_retries(const std::function<grpc::Status()>& call);

  etcd::Client& client_;
  const MutexConfig config_;
  const std::atomic<bool>& stopping_;
  std::atomic<std::uint64_t> retried_{0};
};

}  // namespace lockstep::etcd_lock
