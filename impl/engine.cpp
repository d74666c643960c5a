#include "impl/engine.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace lockstep {

namespace {

// Where an injected `no-timeout` waiter's deadline goes: never reached.
constexpr TimeMs never = time_max;

}  // namespace

Engine::Engine(Config config)
    : config_(std::move(config)),
      next_token_(config_.first_token),
      token_mark_(Token{config_.first_token.value - 1}),
      index_(KeyOfRecord{&keys_}) {
  if (auto error = validate(config_.limits)) throw std::invalid_argument(*error);
  if (config_.first_token.value == 0) throw std::invalid_argument("first_token must be positive");
  if (config_.token_block == 0) throw std::invalid_argument("token_block must be positive");
}

// ---- inputs ---------------------------------------------------------------

LineOutcome Engine::on_line(ConnectionId connection, std::string_view line, TimeMs now,
                            Outputs& out) {
  auto parsed = parse_request(line, config_.limits);
  if (auto* bad = std::get_if<Malformed>(&parsed)) {
    // Time still moves: what was due fires before the answer, as for any input.
    advance(now, out);
    ++counters_.malformed;
    out.push_back({connection, Response::error(bad->reason)});
    return line.size() > config_.limits.max_line_bytes ? LineOutcome::close_connection
                                                       : LineOutcome::keep_open;
  }
  on_request(connection, std::get<Request>(parsed), now, out);
  return LineOutcome::keep_open;
}

void Engine::on_request(ConnectionId connection, const Request& request, TimeMs now, Outputs& out) {
  LOCKSTEP_ASSERT(now >= now_ && now <= time_max);
  // The requests-before-timeouts bug handles the request before the work due
  // at its own instant.
  fire_due(bug(InjectedBug::requests_before_timeouts) ? TimeMs{now.value - 1} : now, out);
  now_ = now;
  ++counters_.requests;
  if (const auto* acquire_request = std::get_if<AcquireRequest>(&request)) {
    acquire(connection, *acquire_request, out);
  } else {
    release(connection, std::get<ReleaseRequest>(request), out);
  }
  // The bug left this instant's due work for after the request.
  if (bug(InjectedBug::requests_before_timeouts)) fire_due(now, out);
}

void Engine::on_close(ConnectionId connection, TimeMs now, Outputs& out) {
  advance(now, out);
  const auto found = connection_waiters_.find(connection);
  if (found == connection_waiters_.end()) return;
  // remove_waiter erases the map entry with the last waiter, so walk a copy.
  const ListHead list = found->second;
  for (Slot waiter = list.head; waiter != no_slot;) {
    const Slot next = waiters_[waiter].connection_links.next;
    remove_waiter(waiter);
    ++counters_.dropped_waiters;
    waiter = next;
  }
  LOCKSTEP_ASSERT(!connection_waiters_.contains(connection));
}

void Engine::advance(TimeMs now, Outputs& out) {
  LOCKSTEP_ASSERT(now >= now_);
  LOCKSTEP_ASSERT(now <= time_max);
  // The requests-before-timeouts bug leaves the work due at a new instant
  // pending until a request there was handled (or the instant is advanced to
  // again), so that a request at `now` comes before it.
  const bool defer = bug(InjectedBug::requests_before_timeouts) && now > now_;
  fire_due(defer ? TimeMs{now.value - 1} : now, out);
  now_ = now;
}

void Engine::fire_due(TimeMs through, Outputs& out) {
  for (auto due = next_due(); due && *due <= through; due = next_due()) fire_instant(*due, out);
}

std::optional<TimeMs> Engine::next_due() const {
  std::optional<TimeMs> due;
  const auto consider = [&due](TimeMs instant) {
    if (!due || instant < *due) due = instant;
  };
  if (!deadline_buckets_.empty()) consider(deadline_buckets_.begin()->first);
  if (!sweep_buckets_.empty()) consider(sweep_buckets_.begin()->first);
  if (!bug_state_.late_answers.empty()) consider(bug_state_.late_answers.begin()->first);
  return due;
}

// ---- requests -------------------------------------------------------------

void Engine::acquire(ConnectionId connection, const AcquireRequest& request, Outputs& out) {
  if (tokens_exhausted_) {
    // No grant is possible: refused whatever the key's state, nothing changed.
    ++counters_.exhausted;
    out.push_back({connection, Response::error("tokens exhausted")});
    return;
  }
  Slot key = index_.find(request.key);
  if (key == no_slot) {
    // simple mode 1 and 5: register a new key unless max_keys are registered.
    if (keys_.live() >= config_.limits.max_keys) {
      ++counters_.busy;
      out.push_back({connection, Response::busy(request.owner, request.key)});
      return;
    }
    key = register_key(request.key);
    ++counters_.grants;
    grant(key, request.owner, request.lease_ms, connection, out);
    return;
  }
  KeyRecord& record = keys_[key];
  const bool same_owner = bug(InjectedBug::same_owner_renewal) &&
                          bug_state_.holder_owner[key] == request.owner;
  if (now_ >= record.expiry || same_owner) {
    // simple mode 2: an expired holder is taken over in place; waiters stay.
    unlink_sweep_bucket(key);
    ++counters_.takeovers;
    grant(key, request.owner, request.lease_ms, connection, out);
    return;
  }
  if (request.wait_ms.value == 0) {
    // simple mode 3: a try-lock on a held key is refused at once, never queued.
    ++counters_.refused;
    out.push_back({connection, Response::timed_out(request.owner, request.key)});
    return;
  }
  // simple mode 5: queueing past either waiter limit is busy, nothing changed.
  std::uint64_t per_key_max = config_.limits.max_waiters_per_key;
  if (bug(InjectedBug::busy_early) && per_key_max > 0) --per_key_max;
  if (record.waiter_count >= per_key_max || waiters_.live() >= config_.limits.max_waiters) {
    ++counters_.busy;
    out.push_back({connection, Response::busy(request.owner, request.key)});
    return;
  }
  // simple mode 4: queued at the tail, answered later.
  enqueue(key, connection, request);
}

void Engine::release(ConnectionId connection, const ReleaseRequest& request, Outputs& out) {
  const Slot key = index_.find(request.key);
  const bool matches =
      key != no_slot &&
      (keys_[key].token == request.token ||
       (bug(InjectedBug::stale_release) && bug_state_.previous_token[key] == request.token));
  if (!matches) {
    // simple mode 7: any other token, or no such key: N with the request's token.
    ++counters_.not_held;
    out.push_back({connection, Response::not_held(request.token, request.key)});
    return;
  }
  // simple mode 6: R, even when the holder expired but the key was not swept;
  // then the head waiter gets the key at once, or the key is deleted.
  ++counters_.releases;
  out.push_back({connection, Response::released(request.token, request.key)});
  KeyRecord& record = keys_[key];
  unlink_sweep_bucket(key);
  if (record.queue.empty()) {
    delete_key(key);
    return;
  }
  const Slot waiter = bug(InjectedBug::lifo_handoff) ? record.queue.tail : record.queue.head;
  ++counters_.handoffs;
  hand_to_waiter(key, waiter, out);
}

// ---- time -----------------------------------------------------------------

void Engine::fire_instant(TimeMs instant, Outputs& out) {
  LOCKSTEP_ASSERT(instant >= now_);
  now_ = instant;
  // docs/protocol.md "Time": at one instant, wait timeouts fire before the sweep.
  if (bug(InjectedBug::sweep_before_timeouts)) {
    sweep(instant, out);
    fire_timeouts(instant, out);
  } else {
    fire_timeouts(instant, out);
    sweep(instant, out);
  }
  for (auto late = bug_state_.late_answers.begin();
       late != bug_state_.late_answers.end() && late->first <= instant;) {
    out.push_back(late->second);
    late = bug_state_.late_answers.erase(late);
  }
}

void Engine::fire_timeouts(TimeMs instant, Outputs& out) {
  const auto found = deadline_buckets_.find(instant);
  if (found == deadline_buckets_.end()) return;
  const Slot bucket = found->second;
  // remove_waiter erases the bucket with its last waiter; stop before that.
  while (true) {
    const Slot waiter = buckets_[bucket].list.head;
    const bool last = waiter == buckets_[bucket].list.tail;
    const WaiterRecord& record = waiters_[waiter];
    ++counters_.timeouts;
    out.push_back({record.connection, Response::timed_out(record.owner, keys_[record.key].key)});
    remove_waiter(waiter);
    if (last) return;
  }
}

void Engine::sweep(TimeMs instant, Outputs& out) {
  const auto found = sweep_buckets_.find(instant);
  if (found == sweep_buckets_.end()) return;
  ++counters_.sweeps;
  // Every key of this bucket expired in (instant - sweep_ms, instant]. Keys
  // entered the bucket when granted, so its live entries are in token order:
  // the order in which the contract's sweep visits expired keys. A hand-off
  // links its key into a later bucket (its new expiry is past `instant`), so
  // the bucket is taken out whole before the first key is visited.
  std::vector<Slot> order = detach_sweep_bucket(found);
  if (bug(InjectedBug::sweep_reverse_token_order) || bug(InjectedBug::sweep_by_key_name) ||
      bug(InjectedBug::sweep_by_expiry)) {
    sweep_out_of_order(std::move(order), instant, out);
    return;
  }
  for (const Slot key : order) sweep_key(key, instant, out);
}

std::vector<Slot> Engine::detach_sweep_bucket(SweepBuckets::iterator bucket) {
  std::vector<Slot> order = std::move(bucket->second.keys);
  std::erase(order, no_slot);
  LOCKSTEP_ASSERT(order.size() == bucket->second.live);
  for (const Slot key : order) keys_[key].bucket_pos = not_in_bucket;
  sweep_buckets_.erase(bucket);
  return order;
}

void Engine::sweep_out_of_order(std::vector<Slot> order, TimeMs instant, Outputs& out) {
  if (bug(InjectedBug::sweep_reverse_token_order)) {
    std::reverse(order.begin(), order.end());
  } else if (bug(InjectedBug::sweep_by_key_name)) {
    std::stable_sort(order.begin(), order.end(), [&](Slot a, Slot b) { return keys_[a].key.view() < keys_[b].key.view(); });
  } else {
    std::stable_sort(order.begin(), order.end(), [&](Slot a, Slot b) { return keys_[a].expiry < keys_[b].expiry; });
  }
  for (const Slot key : order) sweep_key(key, instant, out);
}

void Engine::sweep_key(Slot key, TimeMs instant, Outputs& out) {
  KeyRecord& record = keys_[key];
  LOCKSTEP_ASSERT(record.expiry <= instant);
  LOCKSTEP_ASSERT(record.bucket_pos == not_in_bucket);
  if (!record.queue.empty() && bug(InjectedBug::sweep_drops_waiters)) {
    while (!record.queue.empty()) {
      const WaiterRecord& waiter = waiters_[record.queue.head];
      out.push_back({waiter.connection, Response::timed_out(waiter.owner, record.key)});
      remove_waiter(record.queue.head);
    }
  }
  if (record.queue.empty()) {
    // simple mode 8: an expired key without waiters is deleted.
    ++counters_.sweep_deletions;
    delete_key(key);
  } else {
    // simple mode 8: waiters acquire "through expiry": the head gets the key.
    ++counters_.sweep_handoffs;
    hand_to_waiter(key, record.queue.head, out);
  }
}

// ---- records --------------------------------------------------------------

Slot Engine::register_key(std::string_view key) {
  const Slot slot = keys_.allocate();
  keys_[slot].key.assign(key);
  index_.insert(keys_[slot].key, slot);
  return slot;
}

void Engine::delete_key(Slot key) {
  KeyRecord& record = keys_[key];
  LOCKSTEP_ASSERT(record.queue.empty());
  LOCKSTEP_ASSERT(record.bucket_pos == not_in_bucket);
  index_.erase(record.key);
  if (config_.bug != InjectedBug::none) {
    bug_state_.holder_owner.erase(key);
    bug_state_.previous_token.erase(key);
  }
  keys_.release(key);
}

Token Engine::issue_token(Slot key) {
  if (bug(InjectedBug::token_per_key)) {
    auto& count = bug_state_.token_per_key[std::string(keys_[key].key.view())];
    return Token{config_.first_token.value + count++};
  }
  // Callers check first: an exhausted engine grants nothing.
  LOCKSTEP_ASSERT(!tokens_exhausted_);
  const Token token = next_token_;
  if (token.value == UINT64_MAX) {
    tokens_exhausted_ = true;
  } else {
    ++next_token_.value;
  }
  if (token > token_mark_) {
    const auto room = UINT64_MAX - token.value;
    token_mark_ = Token{token.value + std::min(room, config_.token_block - 1)};
  }
  return token;
}

void Engine::grant(Slot key, std::string_view owner, DurationMs lease_ms, ConnectionId connection,
                   Outputs& out) {
  KeyRecord& record = keys_[key];
  if (config_.bug != InjectedBug::none) {
    bug_state_.previous_token[key] = record.token;
    bug_state_.holder_owner[key] = std::string(owner);
  }
  record.token = issue_token(key);
  DurationMs valid_for = lease_ms;
  if (bug(InjectedBug::early_expiry)) valid_for.value = std::max<std::int64_t>(1, lease_ms.value * 3 / 4);
  record.expiry = now_ + valid_for;
  link_sweep_bucket(key);
  out.push_back({connection, Response::granted(record.token, owner, record.key)});
}

void Engine::hand_to_waiter(Slot key, Slot waiter, Outputs& out) {
  if (tokens_exhausted_) {
    refuse_waiters(key, out);
    return;
  }
  const WaiterRecord& record = waiters_[waiter];
  LOCKSTEP_ASSERT(record.key == key);
  LOCKSTEP_ASSERT(now_ < record.deadline || bug(InjectedBug::sweep_before_timeouts) ||
                  bug(InjectedBug::requests_before_timeouts));
  if (bug(InjectedBug::double_answer)) {
    bug_state_.late_answers.emplace(
        record.deadline,
        Outbound{record.connection, Response::timed_out(record.owner, keys_[key].key)});
  }
  // Copy what the grant needs: removing the waiter releases its record.
  const CompactString owner = record.owner;
  const DurationMs lease_ms = record.lease_ms;
  const ConnectionId connection = record.connection;
  remove_waiter(waiter);
  grant(key, owner, lease_ms, connection, out);
}

// No token is left for the key's next holder: each waiter is told at once
// that it will not get the key (T, in queue order), and the key, which has
// no holder any more, is deleted.
void Engine::refuse_waiters(Slot key, Outputs& out) {
  KeyRecord& record = keys_[key];
  while (!record.queue.empty()) {
    const Slot waiter = record.queue.head;
    ++counters_.exhausted;
    out.push_back({waiters_[waiter].connection, Response::timed_out(waiters_[waiter].owner, record.key)});
    remove_waiter(waiter);
  }
  delete_key(key);
}

void Engine::enqueue(Slot key, ConnectionId connection, const AcquireRequest& request) {
  const Slot waiter = waiters_.allocate();
  WaiterRecord& record = waiters_[waiter];
  record.owner.assign(request.owner);
  record.lease_ms = request.lease_ms;
  record.deadline = bug(InjectedBug::no_timeout) ? never : now_ + request.wait_ms;
  record.connection = connection;
  record.key = key;
  KeyRecord& key_record = keys_[key];
  list_push_back<&WaiterRecord::queue_links>(waiters_, key_record.queue, waiter);
  ++key_record.waiter_count;
  record.bucket = deadline_bucket_at(record.deadline);
  list_push_back<&WaiterRecord::deadline_links>(waiters_, buckets_[record.bucket].list, waiter);
  list_push_back<&WaiterRecord::connection_links>(waiters_, connection_waiters_[connection], waiter);
  ++counters_.queued;
}

void Engine::remove_waiter(Slot waiter) {
  WaiterRecord& record = waiters_[waiter];
  KeyRecord& key_record = keys_[record.key];
  list_unlink<&WaiterRecord::queue_links>(waiters_, key_record.queue, waiter);
  --key_record.waiter_count;
  list_unlink<&WaiterRecord::deadline_links>(waiters_, buckets_[record.bucket].list, waiter);
  drop_deadline_bucket_if_empty(record.bucket);
  const auto connection = connection_waiters_.find(record.connection);
  LOCKSTEP_ASSERT(connection != connection_waiters_.end());
  list_unlink<&WaiterRecord::connection_links>(waiters_, connection->second, waiter);
  if (connection->second.empty()) connection_waiters_.erase(connection);
  waiters_.release(waiter);
}

TimeMs Engine::sweep_instant_for(TimeMs expiry) const {
  // The first sweep instant k * sweep_ms (k >= 1) at or after the expiry.
  const auto period = config_.limits.sweep_ms.value;
  const auto k = std::max<std::int64_t>(1, (expiry.value + period - 1) / period);
  return TimeMs{k * period};
}

void Engine::link_sweep_bucket(Slot key) {
  KeyRecord& record = keys_[key];
  LOCKSTEP_ASSERT(record.bucket_pos == not_in_bucket);
  SweepBucket& bucket = sweep_buckets_[sweep_instant_for(record.expiry)];
  LOCKSTEP_ASSERT(bucket.keys.size() < not_in_bucket);
  record.bucket_pos = static_cast<std::uint32_t>(bucket.keys.size());
  bucket.keys.push_back(key);
  ++bucket.live;
}

void Engine::unlink_sweep_bucket(Slot key) {
  KeyRecord& record = keys_[key];
  const auto found = sweep_buckets_.find(sweep_instant_for(record.expiry));
  LOCKSTEP_ASSERT(found != sweep_buckets_.end());
  SweepBucket& bucket = found->second;
  LOCKSTEP_ASSERT(record.bucket_pos < bucket.keys.size() && bucket.keys[record.bucket_pos] == key);
  bucket.keys[record.bucket_pos] = no_slot;
  record.bucket_pos = not_in_bucket;
  if (--bucket.live == 0) {
    sweep_buckets_.erase(found);
  } else if (bucket.keys.size() - bucket.live > bucket.live + compact_slack) {
    compact_sweep_bucket(bucket);
  }
}

void Engine::compact_sweep_bucket(SweepBucket& bucket) {
  std::erase(bucket.keys, no_slot);
  LOCKSTEP_ASSERT(bucket.keys.size() == bucket.live);
  for (std::uint32_t pos = 0; pos < bucket.keys.size(); ++pos) keys_[bucket.keys[pos]].bucket_pos = pos;
}

Slot Engine::deadline_bucket_at(TimeMs instant) {
  const auto [at, fresh] = deadline_buckets_.try_emplace(instant, no_slot);
  if (fresh) {
    at->second = buckets_.allocate();
    buckets_[at->second].instant = instant;
  }
  return at->second;
}

void Engine::drop_deadline_bucket_if_empty(Slot bucket) {
  if (!buckets_[bucket].list.empty()) return;
  deadline_buckets_.erase(buckets_[bucket].instant);
  buckets_.release(bucket);
}

// ---- inspection -----------------------------------------------------------

std::optional<KeyView> Engine::view(std::string_view key) const {
  const Slot slot = index_.find(key);
  if (slot == no_slot) return std::nullopt;
  const KeyRecord& record = keys_[slot];
  KeyView result{record.token, record.expiry, {}};
  for (Slot w = record.queue.head; w != no_slot; w = waiters_[w].queue_links.next) {
    const WaiterRecord& waiter = waiters_[w];
    result.queue.push_back({std::string(waiter.owner.view()), waiter.lease_ms, waiter.deadline, waiter.connection});
  }
  return result;
}

void Engine::check_invariants() const {
  // This bug handles requests before what is due, so due work can lag now_.
  const bool lagging = bug(InjectedBug::requests_before_timeouts);
  // Counts agree with the records, and limits hold.
  LOCKSTEP_ASSERT(index_.size() == keys_.live());
  LOCKSTEP_ASSERT(keys_.live() <= config_.limits.max_keys);
  LOCKSTEP_ASSERT(waiters_.live() <= config_.limits.max_waiters);
  std::size_t keys_in_buckets = 0;
  for (const auto& [instant, bucket] : sweep_buckets_) {
    LOCKSTEP_ASSERT(bucket.live > 0);
    LOCKSTEP_ASSERT(bucket.keys.size() - bucket.live <= bucket.live + compact_slack);
    LOCKSTEP_ASSERT(instant > now_ || lagging);
    LOCKSTEP_ASSERT(instant.value % config_.limits.sweep_ms.value == 0);
    std::optional<Token> previous;
    std::uint32_t live = 0;
    for (std::uint32_t pos = 0; pos < bucket.keys.size(); ++pos) {
      const Slot key = bucket.keys[pos];
      if (key == no_slot) continue;
      ++live;
      const KeyRecord& record = keys_[key];
      LOCKSTEP_ASSERT(record.bucket_pos == pos);
      LOCKSTEP_ASSERT(index_.find(record.key) == key);
      LOCKSTEP_ASSERT(sweep_instant_for(record.expiry) == instant);
      // Live entries are in token order; the sweep relies on it.
      if (previous && !bug(InjectedBug::token_per_key)) LOCKSTEP_ASSERT(*previous < record.token);
      LOCKSTEP_ASSERT(record.token < next_token_ || (tokens_exhausted_ && record.token == next_token_) ||
                      bug(InjectedBug::token_per_key));
      previous = record.token;
      std::uint32_t queued = 0;
      for (Slot w = record.queue.head; w != no_slot; w = waiters_[w].queue_links.next) {
        LOCKSTEP_ASSERT(waiters_[w].key == key);
        ++queued;
      }
      LOCKSTEP_ASSERT(queued == record.waiter_count);
      LOCKSTEP_ASSERT(queued <= config_.limits.max_waiters_per_key);
      ++keys_in_buckets;
    }
    LOCKSTEP_ASSERT(live == bucket.live);
  }
  // Every registered key is in exactly one sweep bucket.
  LOCKSTEP_ASSERT(keys_in_buckets == keys_.live());
  std::size_t waiters_in_buckets = 0;
  for (const auto& [deadline, bucket] : deadline_buckets_) {
    LOCKSTEP_ASSERT(buckets_[bucket].instant == deadline);
    const ListHead& list = buckets_[bucket].list;
    LOCKSTEP_ASSERT(!list.empty());
    LOCKSTEP_ASSERT(deadline > now_ || lagging);
    for (Slot w = list.head; w != no_slot; w = waiters_[w].deadline_links.next) {
      LOCKSTEP_ASSERT(waiters_[w].deadline == deadline);
      ++waiters_in_buckets;
    }
  }
  LOCKSTEP_ASSERT(waiters_in_buckets == waiters_.live());
  LOCKSTEP_ASSERT(buckets_.live() == deadline_buckets_.size());
  std::size_t waiters_by_connection = 0;
  for (const auto& [connection, list] : connection_waiters_) {
    LOCKSTEP_ASSERT(!list.empty());
    for (Slot w = list.head; w != no_slot; w = waiters_[w].connection_links.next) {
      LOCKSTEP_ASSERT(waiters_[w].connection == connection);
      ++waiters_by_connection;
    }
  }
  LOCKSTEP_ASSERT(waiters_by_connection == waiters_.live());
  LOCKSTEP_ASSERT(token_mark_ >= next_token_ || token_mark_.value + 1 == next_token_.value);
  LOCKSTEP_ASSERT(!tokens_exhausted_ || (next_token_.value == UINT64_MAX && token_mark_.value == UINT64_MAX) ||
                  bug(InjectedBug::token_per_key));
}

}  // namespace lockstep
