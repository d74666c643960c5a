#include "adapters/etcd_lock/etcd_mutex.hpp"

#include <algorithm>
#include <thread>

#include "adapters/etcd_lock/lock_keys.hpp"

namespace lockstep::etcd_lock {

namespace {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;
using Clock = std::chrono::steady_clock;

// The key of lowest create revision under `prefix`: the holder. With
// `below`, the highest one created before that revision instead: the key a
// waiter waits on (Mutex's WithFirstCreate and WithLastCreate +
// WithMaxCreateRev).
RangeRequest holder_range(const std::string& prefix) {
  RangeRequest range;
  range.set_key(prefix);
  range.set_range_end(etcd::prefix_end(prefix));
  range.set_sort_target(RangeRequest::CREATE);
  range.set_sort_order(RangeRequest::ASCEND);
  range.set_limit(1);
  return range;
}

RangeRequest predecessor_range(const std::string& prefix, std::int64_t below) {
  RangeRequest range = holder_range(prefix);
  range.set_sort_order(RangeRequest::DESCEND);
  range.set_max_create_revision(below - 1);
  return range;
}

Compare* compare_create(TxnRequest& txn, const std::string& key, Compare::CompareResult result, std::int64_t revision) {
  Compare* compare = txn.add_compare();
  compare->set_target(Compare::CREATE);
  compare->set_result(result);
  compare->set_key(key);
  compare->set_create_revision(revision);
  return compare;
}

// The holder a transaction's last operation read, if any.
const mvccpb::KeyValue* holder_in(const TxnResponse& response) {
  if (response.responses_size() == 0) return nullptr;
  const auto& range = response.responses(response.responses_size() - 1).response_range();
  return range.kvs_size() == 0 ? nullptr : &range.kvs(0);
}

std::chrono::system_clock::time_point system_time_of(Clock::time_point when) {
  const auto left = std::max(when - Clock::now(), Clock::duration::zero());
  return std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(left);
}

}  // namespace

bool EtcdMutex::with_retries(const std::function<grpc::Status()>& call) {
  while (true) {
    if (call().ok()) return true;
    if (stopping_.load()) return false;
    ++retried_;
    std::this_thread::sleep_for(config_.retry_pause);
  }
}

std::int64_t EtcdMutex::refresh(std::int64_t lease) {
  etcdserverpb::LeaseKeepAliveResponse response;
  if (!with_retries([&] { return client_.lease_keep_alive(lease, response, config_.call_timeout); })) return 0;
  return response.ttl();
}

void EtcdMutex::revoke(std::int64_t lease) {
  // Cleaning up: the lease would expire by itself within its TTL, so one
  // attempt is enough. (A lease already gone is NOT_FOUND, also fine.)
  [[maybe_unused]] const auto status = client_.lease_revoke(lease, config_.call_timeout);
}

AcquireOutcome EtcdMutex::acquire(const AcquireAsk& ask, WaiterSlots& slots, Cancellation& cancel,
                                  const std::function<void()>& placed) {
  const std::string prefix = key_prefix(config_.prefix, ask.key);
  etcdserverpb::LeaseGrantResponse grant;
  if (!with_retries([&] { return client_.lease_grant(lease_ttl_s(ask.lease_ms), grant, config_.call_timeout); })) {
    placed();
    return {};
  }
  const std::int64_t lease = grant.id();
  const std::string my_key = acquire_key(prefix, lease);

  // A request that may not wait must not queue, even for a moment: its put
  // is made only on a free key.
  const bool may_wait = ask.wait_ms > 0 && slots.reserve(ask.key);
  TxnRequest txn;
  auto* put = [&] {
    if (may_wait) {
      compare_create(txn, my_key, Compare::EQUAL, 0);  // Mutex.Lock: put if absent
      *txn.add_failure()->mutable_request_range() = [&] {
        RangeRequest mine;
        mine.set_key(my_key);
        return mine;
      }();
    } else {
      compare_create(txn, prefix, Compare::EQUAL, 0)->set_range_end(etcd::prefix_end(prefix));  // nothing under it
    }
    return txn.add_success()->mutable_request_put();
  }();
  put->set_key(my_key);
  put->set_value(ask.owner);
  put->set_lease(lease);
  *txn.add_success()->mutable_request_range() = holder_range(prefix);
  *txn.add_failure()->mutable_request_range() = holder_range(prefix);
  TxnResponse response;
  if (!with_retries([&] { return client_.txn(txn, response, config_.call_timeout); })) {
    if (may_wait) slots.release(ask.key);
    placed();
    return {};
  }
  placed();
  const mvccpb::KeyValue* holder = holder_in(response);

  if (!may_wait) {
    // Granted if the put was made (or, on a retried call, had been made).
    if (holder != nullptr && holder->key() == my_key) return granted(holder->create_revision(), lease);
    revoke(lease);
    return {ask.wait_ms == 0 ? AcquireOutcome::Kind::timed_out : AcquireOutcome::Kind::busy, 0};
  }

  // Mutex.Lock: its revision is the put's, or the key's own on a retried call.
  const std::int64_t my_rev =
      response.succeeded() ? response.header().revision()
      : response.responses(0).response_range().kvs_size() > 0 ? response.responses(0).response_range().kvs(0).create_revision()
                                                               : 0;
  Turn turn = Turn::timed_out;  // no key of its own (it cannot happen: only its lease's end deletes it)
  if (my_rev != 0) {
    turn = holder != nullptr && holder->create_revision() == my_rev
               ? Turn::holds
               : wait_for_turn(prefix, my_key, my_rev, lease, grant.ttl(),
                               Clock::now() + std::chrono::milliseconds(ask.wait_ms), cancel);
  }
  slots.release(ask.key);
  switch (turn) {
    case Turn::holds:
      return granted(my_rev, lease);
    case Turn::timed_out:
      revoke(lease);
      return {AcquireOutcome::Kind::timed_out, 0};
    case Turn::dropped:
      revoke(lease);
      return {AcquireOutcome::Kind::dropped, 0};
    case Turn::lost:
      revoke(lease);
      return {AcquireOutcome::Kind::lost, 0};
    case Turn::abandoned:
      break;
  }
  return {};
}

// The lease's TTL restarts at the grant. A lease etcd already ended (it
// counts from the lease's creation, and etcd was out of reach for longer
// than its TTL before the put came through) took the key with it: the hold
// lasted no time, which is no grant to report.
AcquireOutcome EtcdMutex::granted(std::int64_t token, std::int64_t lease) {
  const std::int64_t ttl_s = refresh(lease);
  if (ttl_s <= 0) return {AcquireOutcome::Kind::lost, 0};
  return {AcquireOutcome::Kind::granted, static_cast<std::uint64_t>(token)};
}

EtcdMutex::Turn EtcdMutex::wait_for_turn(const std::string& prefix, const std::string& my_key, std::int64_t my_rev,
                                          std::int64_t lease, std::int64_t ttl_s, Clock::time_point deadline,
                                          Cancellation& cancel) {
  // etcd's own session refreshes its lease at a third of its TTL.
  const auto keep_alive_every = std::chrono::milliseconds(std::max<std::int64_t>(ttl_s, 1) * 1000 / 3);
  auto next_keep_alive = Clock::now() + keep_alive_every;
  const auto decide = [&](Turn otherwise) {
    const auto decision = holds_or_leaves(prefix, my_key, my_rev);
    if (!decision) return Turn::abandoned;
    switch (*decision) {
      case Decision::holds:
        return Turn::holds;
      case Decision::lost:
        return Turn::lost;
      case Decision::left:
        break;
    }
    return otherwise;
  };
  while (true) {
    if (cancel.cancelled()) return decide(Turn::dropped);
    if (Clock::now() >= deadline) return decide(Turn::timed_out);
    if (Clock::now() >= next_keep_alive) {
      etcdserverpb::LeaseKeepAliveResponse alive;
      const auto status = client_.lease_keep_alive(lease, alive, config_.call_timeout);
      if (status.ok() && alive.ttl() <= 0) return Turn::lost;  // etcd ended the lease, and its key
      next_keep_alive = Clock::now() + keep_alive_every;
    }
    etcdserverpb::RangeResponse before;
    if (!client_.range(predecessor_range(prefix, my_rev), before, config_.call_timeout).ok()) {
      if (stopping_.load()) return Turn::abandoned;
      ++retried_;
      std::this_thread::sleep_for(config_.retry_pause);
      continue;
    }
    // Nothing created before it is left: confirmed at one revision with its
    // own key still there.
    if (before.kvs_size() == 0) return decide(Turn::lost);
    // Watch the deletion of the key just before it, from the revision it
    // was read at (nothing in between is missed), until the deadline or the
    // next keep-alive.
    auto watch = client_.watch(system_time_of(std::min(deadline, next_keep_alive)));
    etcdserverpb::WatchCreateRequest create;
    create.set_key(before.kvs(0).key());
    create.set_start_revision(before.header().revision() + 1);
    create.add_filters(etcdserverpb::WatchCreateRequest::NOPUT);
    if (!cancel.attach([w = watch.get()] { w->cancel(); })) continue;
    if (watch->create(create)) {
      etcdserverpb::WatchResponse event;
      while (watch->read(event)) {
        if (event.events_size() > 0 || event.canceled()) break;  // deleted (or the watch ended): look again
      }
    }
    cancel.detach();
    watch->cancel();
  }
}

std::optional<EtcdMutex::Decision> EtcdMutex::holds_or_leaves(const std::string& prefix, const std::string& my_key,
                                                              std::int64_t my_rev) {
  // One revision decides: its key still stands and nothing under the
  // prefix is older (it holds), or its key is deleted (it leaves the
  // queue; `deleted` says whether it was still there to delete).
  TxnRequest txn;
  compare_create(txn, my_key, Compare::EQUAL, my_rev);
  compare_create(txn, prefix, Compare::GREATER, my_rev - 1)->set_range_end(etcd::prefix_end(prefix));
  txn.add_failure()->mutable_request_delete_range()->set_key(my_key);
  TxnResponse response;
  // A retried call whose first attempt deleted the key reads as lost: that
  // is only reported when the wait was cut short, never as a grant.
  if (!with_retries([&] { return client_.txn(txn, response, config_.call_timeout); })) return std::nullopt;
  if (response.succeeded()) return Decision::holds;
  const bool deleted = response.responses_size() > 0 && response.responses(0).response_delete_range().deleted() > 0;
  return deleted ? Decision::left : Decision::lost;
}

ReleaseOutcome EtcdMutex::release(const std::string& key, std::int64_t token) {
  const std::string prefix = key_prefix(config_.prefix, key);
  etcdserverpb::RangeResponse holder;
  if (!with_retries([&] { return client_.range(holder_range(prefix), holder, config_.call_timeout); })) return {};
  if (holder.kvs_size() == 0 || holder.kvs(0).create_revision() != token) return {ReleaseOutcome::Kind::not_held};
  const std::string holder_key = holder.kvs(0).key();
  TxnRequest txn;
  compare_create(txn, holder_key, Compare::EQUAL, token);
  txn.add_success()->mutable_request_delete_range()->set_key(holder_key);
  TxnResponse response;
  // A delete whose answer was lost may have been made: if a later attempt
  // finds the key gone, that delete was this release's.
  bool may_have_deleted = false;
  while (true) {
    const auto status = client_.txn(txn, response, config_.call_timeout);
    if (status.ok()) break;
    may_have_deleted = may_have_deleted || etcd::may_have_applied(status);
    if (stopping_.load()) return {};
    ++retried_;
    std::this_thread::sleep_for(config_.retry_pause);
  }
  if (!response.succeeded() && !may_have_deleted) return {ReleaseOutcome::Kind::not_held};
  if (const auto lease = lease_of(prefix, holder_key)) revoke(*lease);
  return {ReleaseOutcome::Kind::released};
}

}  // namespace lockstep::etcd_lock
