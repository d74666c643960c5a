#include "drivers/etcd/log.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace lockstep::etcd {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::int64_t steady_ms() {
  return std::chrono::duration_cast<milliseconds>(Clock::now().time_since_epoch()).count();
}

// Log entries read per Range while catching up: at most 64 entries of at
// most entry_bytes_max each in one response.
constexpr std::int64_t log_page_keys = 64;
// A watch heard nothing (no event, no answer to a progress request) for
// this long past the call timeout is restarted.
constexpr milliseconds watch_silence_extra{3'000};
constexpr milliseconds pulse_period{1'000};

}  // namespace

EtcdLog::EtcdLog(LogConfig config)
    : config_(std::move(config)),
      keys_(config_.prefix),
      client_(config_.target),
      events_(config_.events_bytes_max) {}

EtcdLog::~EtcdLog() { stop(); }

void EtcdLog::start() {
  threads_.emplace_back([this] { watch_loop(); });
  threads_.emplace_back([this] { pulse_loop(); });
  threads_.emplace_back([this] { elect_loop(); });
  threads_.emplace_back([this] { propose_loop(); });
  threads_.emplace_back([this] { snapshot_loop(); });
}

void EtcdLog::stop() {
  if (stopping_.exchange(true)) return;
  // Wake every thread; the elector resigns on its way out. Notified under
  // each mutex, so no thread misses it between its check and its wait.
  const auto wake = [](std::mutex& mutex, std::condition_variable& cv) {
    std::lock_guard lock(mutex);
    cv.notify_all();
  };
  wake(sleep_mutex_, sleep_cv_);
  wake(elect_mutex_, elect_cv_);
  wake(snapshot_mutex_, snapshot_cv_);
  wake(propose_mutex_, propose_cv_);
  {
    std::lock_guard lock(watch_mutex_);
    if (watch_) watch_->cancel();
  }
  events_.close();
  for (auto& thread : threads_) thread.join();
  threads_.clear();
}

void EtcdLog::post(LogEvent event, std::size_t bytes) { events_.push(std::move(event), bytes); }

void EtcdLog::sleep_for(Timeout duration) {
  std::unique_lock lock(sleep_mutex_);
  sleep_cv_.wait_for(lock, duration, [&] { return stopping_.load(); });
}

etcdserverpb::Compare EtcdLog::fence(std::uint64_t epoch) const {
  etcdserverpb::Compare compare;
  compare.set_key(keys_.leader());
  compare.set_target(etcdserverpb::Compare::CREATE);
  compare.set_result(etcdserverpb::Compare::EQUAL);
  compare.set_create_revision(static_cast<std::int64_t>(epoch));
  return compare;
}

// ---- the watcher: sync, then follow -----------------------------------------

void EtcdLog::watch_loop() {
  const auto started = Clock::now();
  milliseconds backoff{100};
  while (!stopping_) {
    std::string error;
    SyncError kind = SyncError::none;
    const auto revision = sync(error, kind);
    if (!revision) {
      if (kind == SyncError::corrupt) {
        post(log_event::Failed{fmt::format("the log under '{}' in etcd cannot be read: {}", keys_.prefix(), error)});
        return;
      }
      if (!ready_ && Clock::now() - started >= config_.start_timeout) {
        post(log_event::Failed{fmt::format("cannot read the log from etcd at {} within {} ms: {}",
                                           fmt::join(config_.target.endpoints, ","), config_.start_timeout.count(),
                                           error)});
        return;
      }
      sleep_for(backoff);
      backoff = std::min(backoff * 2, milliseconds{1'000});
      continue;
    }
    backoff = milliseconds{100};
    if (!ready_) {
      ready_ = true;
      post(log_event::Ready{});
    }
    follow(*revision + 1);
  }
}

// Reads, at one revision, the latest snapshot if it is ahead of what was
// delivered, the log entries after what was delivered, and the election
// key; delivers them; returns that revision.
std::optional<std::int64_t> EtcdLog::sync(std::string& error, SyncError& kind) {
  kind = SyncError::retry;
  etcdserverpb::RangeRequest request;
  request.set_key(keys_.snapshot());
  etcdserverpb::RangeResponse pointer_response;
  const auto status = client_.range(request, pointer_response, config_.call_timeout);
  if (!status.ok()) {
    error = describe(status);
    return std::nullopt;
  }
  const std::int64_t revision = pointer_response.header().revision();
  if (pointer_response.kvs_size() > 0 && !sync_snapshot(pointer_response.kvs(0).value(), revision, error, kind)) {
    return std::nullopt;
  }
  if (!sync_log(revision, error, kind) || !sync_leader(revision, error)) return std::nullopt;
  kind = SyncError::none;
  return revision;
}

// Delivers the snapshot the pointer names if it is ahead of what was
// delivered.
bool EtcdLog::sync_snapshot(std::string_view pointer_bytes, std::int64_t revision, std::string& error,
                            SyncError& kind) {
  const auto pointer = decode_pointer(pointer_bytes, error);
  if (!pointer) {
    kind = SyncError::corrupt;
    return false;
  }
  if (pointer->index <= delivered_) return true;
  auto state = read_snapshot(*pointer, revision, error, kind);
  if (!state) return false;
  const auto bytes = state->size();
  post(log_event::Restored{pointer->index, std::move(*state)}, bytes);
  delivered_ = pointer->index;
  return true;
}

// The snapshot's state, its chunks read at `revision` and checked against
// its pointer.
std::optional<std::string> EtcdLog::read_snapshot(const SnapshotPointer& pointer, std::int64_t revision,
                                                  std::string& error, SyncError& kind) {
  std::string state;
  state.reserve(pointer.bytes);
  for (std::uint32_t chunk = 0; chunk < pointer.chunks; ++chunk) {
    etcdserverpb::RangeRequest chunk_request;
    chunk_request.set_key(keys_.chunk_key(pointer.index, chunk));
    chunk_request.set_revision(revision);
    etcdserverpb::RangeResponse chunk_response;
    const auto status = client_.range(chunk_request, chunk_response, config_.call_timeout);
    if (!status.ok()) {
      error = describe(status);
      return std::nullopt;
    }
    if (chunk_response.kvs_size() == 0) {
      kind = SyncError::corrupt;
      error = fmt::format("chunk {} of the snapshot of index {} is missing", chunk, pointer.index);
      return std::nullopt;
    }
    state += chunk_response.kvs(0).value();
  }
  if (state.size() != pointer.bytes || fnv1a_64(state) != pointer.hash) {
    kind = SyncError::corrupt;
    error = fmt::format("the snapshot of index {} does not match its pointer", pointer.index);
    return std::nullopt;
  }
  return state;
}

// Delivers the log entries at `revision` after what was delivered.
bool EtcdLog::sync_log(std::int64_t revision, std::string& error, SyncError& kind) {
  // The log, in key order (which is log order), a page at a time.
  std::string from = keys_.log_prefix();
  while (true) {
    etcdserverpb::RangeRequest page_request;
    page_request.set_key(from);
    page_request.set_range_end(prefix_end(keys_.log_prefix()));
    page_request.set_revision(revision);
    page_request.set_limit(log_page_keys);
    etcdserverpb::RangeResponse page;
    const auto status = client_.range(page_request, page, config_.call_timeout);
    if (!status.ok()) {
      error = describe(status);
      return false;
    }
    std::uint64_t previous = 0;
    for (const auto& kv : page.kvs()) {
      const auto index = static_cast<std::uint64_t>(kv.mod_revision());
      if (index <= previous) {
        kind = SyncError::corrupt;
        error = fmt::format("log key {} was written before the key ahead of it", kv.key());
        return false;
      }
      previous = index;
      deliver_entry(kv);
    }
    if (!page.more() || page.kvs_size() == 0) return true;
    from = page.kvs(page.kvs_size() - 1).key() + '\0';
  }
}

// Delivers the election key as it was at `revision`.
bool EtcdLog::sync_leader(std::int64_t revision, std::string& error) {
  etcdserverpb::RangeRequest leader_request;
  leader_request.set_key(keys_.leader());
  leader_request.set_revision(revision);
  etcdserverpb::RangeResponse leader_response;
  const auto status = client_.range(leader_request, leader_response, config_.call_timeout);
  if (!status.ok()) {
    error = describe(status);
    return false;
  }
  deliver_leader(leader_response.kvs_size() > 0 ? &leader_response.kvs(0) : nullptr);
  return true;
}

void EtcdLog::deliver_entry(const mvccpb::KeyValue& kv) {
  const auto index = static_cast<std::uint64_t>(kv.mod_revision());
  if (index <= delivered_) return;  // delivered already, or covered by the snapshot
  delivered_ = index;
  post(log_event::Committed{index, kv.key(), kv.value()}, kv.key().size() + kv.value().size() + 64);
}

void EtcdLog::deliver_leader(const mvccpb::KeyValue* kv) {
  if (kv == nullptr) {
    if (leader_epoch_seen_ && *leader_epoch_seen_ == 0) return;
    leader_epoch_seen_ = 0;
    post(log_event::LeaderGone{});
    return;
  }
  const auto epoch = static_cast<std::uint64_t>(kv->create_revision());
  if (leader_epoch_seen_ == epoch) return;
  leader_epoch_seen_ = epoch;
  auto record = decode_leader(kv->value());
  // A record this version cannot read still names a leader: its epoch.
  post(log_event::LeaderSeen{epoch, record ? *record : LeaderRecord{}});
}

void EtcdLog::follow(std::int64_t from_revision) {
  std::shared_ptr<Client::Watch> watch = client_.watch();
  {
    std::lock_guard lock(watch_mutex_);
    if (stopping_) return;
    watch_ = watch;
  }
  etcdserverpb::WatchCreateRequest create;
  create.set_key(keys_.watch_begin());
  create.set_range_end(keys_.watch_end());
  create.set_start_revision(from_revision);
  watch_heard_ms_ = steady_ms();
  etcdserverpb::WatchResponse response;
  if (watch->create(create)) {
    while (!stopping_ && watch->read(response)) {
      watch_heard_ms_ = steady_ms();
      // Canceled: compacted past what this node saw, or refused; either way
      // start over from a sync.
      if (response.canceled()) break;
      for (const auto& event : response.events()) {
        const auto& kv = event.kv();
        if (kv.key() == keys_.leader()) {
          deliver_leader(event.type() == mvccpb::Event::PUT ? &kv : nullptr);
        } else if (event.type() == mvccpb::Event::PUT && keys_.is_log_key(kv.key())) {
          deliver_entry(kv);
        }
      }
    }
  }
  {
    std::lock_guard lock(watch_mutex_);
    watch_.reset();
  }
  watch->finish();
}

void EtcdLog::pulse_loop() {
  const auto silence_max = config_.call_timeout + watch_silence_extra;
  while (!stopping_) {
    sleep_for(pulse_period);
    std::shared_ptr<Client::Watch> watch;
    {
      std::lock_guard lock(watch_mutex_);
      watch = watch_;
    }
    if (!watch) continue;
    if (milliseconds{steady_ms() - watch_heard_ms_.load()} > silence_max) {
      watch->cancel();  // the watcher syncs again, perhaps through another member
    } else {
      watch->request_progress();
    }
  }
}

// ---- the elector ------------------------------------------------------------

void EtcdLog::campaign_now() {
  std::lock_guard lock(elect_mutex_);
  nudged_ = true;
  elect_cv_.notify_all();
}

void EtcdLog::elect_loop() {
  // Poll for a vacant election key this often, besides campaign_now().
  const milliseconds poll{std::min<std::int64_t>(1'000, config_.leader_ttl_s * 1000 / 3)};
  bool first = true;
  while (!stopping_) {
    bool leading = false;
    {
      std::unique_lock lock(elect_mutex_);
      leading = epoch_ != 0;
      if (!leading && !first) {
        elect_cv_.wait_for(lock, poll, [&] { return stopping_ || nudged_; });
        nudged_ = false;
      }
    }
    first = false;
    if (stopping_) break;
    if (leading) {
      keep_leading();
    } else {
      campaign();
    }
  }
  // Resign: another node need not wait out the lease.
  std::int64_t lease = 0;
  {
    std::lock_guard lock(elect_mutex_);
    lease = lease_;
    lease_ = 0;
    epoch_ = 0;
  }
  if (lease != 0) client_.lease_revoke(lease, config_.call_timeout);
}

void EtcdLog::campaign() {
  const auto sent = Clock::now();
  etcdserverpb::LeaseGrantResponse grant;
  if (!client_.lease_grant(config_.leader_ttl_s, grant, config_.call_timeout).ok()) return;
  etcdserverpb::TxnRequest txn;
  auto* vacant = txn.add_compare();
  vacant->set_key(keys_.leader());
  vacant->set_target(etcdserverpb::Compare::CREATE);
  vacant->set_result(etcdserverpb::Compare::EQUAL);
  vacant->set_create_revision(0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(keys_.leader());
  put->set_value(encode_leader(config_.self));
  put->set_lease(grant.id());
  txn.add_failure()->mutable_request_range()->set_key(keys_.leader());
  etcdserverpb::TxnResponse response;
  const auto status = client_.txn(txn, response, config_.call_timeout);
  if (status.ok() && response.succeeded()) {
    const auto epoch = static_cast<std::uint64_t>(response.header().revision());
    {
      std::lock_guard lock(elect_mutex_);
      lease_ = grant.id();
      epoch_ = epoch;
      lease_ttl_ = milliseconds{grant.ttl() * 1000};
      keep_alive_sent_ = sent;
      lease_valid_until_ = sent + lease_ttl_;
    }
    post(log_event::Elected{epoch});
    return;
  }
  // Lost, or unknown: revoking the lease deletes the key if this write
  // created it after all.
  client_.lease_revoke(grant.id(), config_.call_timeout);
  if (!status.ok() || response.responses_size() == 0) return;
  const auto& held = response.responses(0).response_range().kvs();
  if (held.empty()) return;
  // The key names this node under a lease it does not hold: an earlier run
  // of this node (node ids are unique to one process), killed before it
  // could resign. Its lease is revoked rather than waited out.
  const auto record = decode_leader(held[0].value());
  if (record && record->node_id == config_.self.node_id && held[0].lease() != 0) {
    client_.lease_revoke(held[0].lease(), config_.call_timeout);
    std::lock_guard lock(elect_mutex_);
    nudged_ = true;
  }
}

void EtcdLog::keep_leading() {
  std::uint64_t epoch = 0;
  std::int64_t lease = 0;
  {
    std::unique_lock lock(elect_mutex_);
    if (epoch_ == 0) return;
    // Keep-alives three times a lease; give up leading when the lease may
    // end before the next could be answered (a twentieth of it to spare).
    const auto next = keep_alive_sent_ + lease_ttl_ / 3;
    const auto give_up = lease_valid_until_ - lease_ttl_ / 20;
    elect_cv_.wait_until(lock, std::min(next, give_up), [&] { return stopping_ || epoch_ == 0; });
    if (stopping_ || epoch_ == 0) return;
    epoch = epoch_;
    lease = lease_;
    if (Clock::now() >= give_up) {
      lock.unlock();
      lose(epoch, "the leader's lease could not be renewed in time", true);
      return;
    }
  }
  const auto sent = Clock::now();
  // The call waits no later than the moment this node must stop leading:
  // across a black hole (a partition that drops packets, connections kept
  // open) a keep-alive waited the whole call timeout, 5 s by default, and the
  // node kept leading that long, past its lease and past the moment etcd let
  // another node lead (tests/cluster_live/partition_test.cpp).
  Timeout patience = config_.call_timeout;
  {
    std::lock_guard lock(elect_mutex_);
    const auto left = std::chrono::duration_cast<milliseconds>(lease_valid_until_ - lease_ttl_ / 20 - sent);
    patience = std::min(patience, std::max(Timeout{1}, std::chrono::duration_cast<Timeout>(left)));
  }
  etcdserverpb::LeaseKeepAliveResponse response;
  const auto status = client_.lease_keep_alive(lease, response, patience);
  std::unique_lock lock(elect_mutex_);
  if (epoch_ != epoch) return;
  keep_alive_sent_ = sent;
  if (!status.ok()) return;  // tried again at the next period, until give_up
  if (response.ttl() <= 0) {
    lock.unlock();
    lose(epoch, "the leader's lease expired", false);
    return;
  }
  lease_valid_until_ = sent + milliseconds{response.ttl() * 1000};
}

void EtcdLog::lose(std::uint64_t epoch, const std::string& reason, bool revoke) {
  std::int64_t lease = 0;
  {
    std::lock_guard lock(elect_mutex_);
    if (epoch_ == epoch) {
      lease = lease_;
      lease_ = 0;
      epoch_ = 0;
    }
  }
  std::vector<std::uint64_t> failed;
  {
    std::lock_guard lock(propose_mutex_);
    lost_through_ = std::max(lost_through_, epoch);
    if (propose_epoch_ <= epoch) {
      propose_epoch_ = 0;
      for (auto& pending : pending_) failed.push_back(pending.id);
      pending_.clear();
    }
  }
  if (!failed.empty()) post(log_event::ProposalsFailed{std::move(failed)});
  post(log_event::Deposed{epoch, reason});
  if (revoke && lease != 0) client_.lease_revoke(lease, config_.call_timeout);
}

// ---- the proposer -----------------------------------------------------------

void EtcdLog::begin_epoch(std::uint64_t epoch) {
  std::lock_guard lock(propose_mutex_);
  if (epoch <= lost_through_ || epoch <= propose_epoch_) return;
  propose_epoch_ = epoch;
  writes_ = 0;
  pending_.clear();
}

void EtcdLog::propose(std::uint64_t epoch, std::uint64_t id, std::string bytes) {
  {
    std::lock_guard lock(propose_mutex_);
    if (epoch == propose_epoch_ && epoch != 0) {
      pending_.push_back(Pending{id, std::move(bytes)});
      propose_cv_.notify_all();
      return;
    }
  }
  post(log_event::ProposalsFailed{{id}});
}

std::size_t EtcdLog::proposals_pending() const {
  std::lock_guard lock(propose_mutex_);
  return pending_.size() + in_flight_;
}

void EtcdLog::propose_loop() {
  while (true) {
    std::vector<std::uint64_t> ids;
    std::string bytes;
    std::uint64_t epoch = 0;
    std::uint64_t write = 0;
    {
      std::unique_lock lock(propose_mutex_);
      propose_cv_.wait(lock, [&] { return stopping_ || (propose_epoch_ != 0 && !pending_.empty()); });
      if (stopping_) return;
      epoch = propose_epoch_;
      write = ++writes_;
      // Everything waiting, up to one entry's bytes (at least one proposal).
      while (!pending_.empty() &&
             (ids.empty() || bytes.size() + pending_.front().bytes.size() <= entry_bytes_max)) {
        ids.push_back(pending_.front().id);
        bytes += pending_.front().bytes;
        pending_.pop_front();
      }
      in_flight_ = ids.size();
    }
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = fence(epoch);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(keys_.log_key(epoch, write));
    put->set_value(std::move(bytes));
    etcdserverpb::TxnResponse response;
    const auto status = client_.txn(txn, response, config_.call_timeout);
    {
      std::lock_guard lock(propose_mutex_);
      in_flight_ = 0;
    }
    if (status.ok() && response.succeeded()) {
      ++entries_written_;
      proposals_written_ += ids.size();
      continue;  // the watch brings it back, applied in order
    }
    // Fenced, or unknown. Unknown leaves no choice but to stop leading: a
    // later write of this epoch could otherwise land before it.
    post(log_event::ProposalsFailed{std::move(ids)});
    lose(epoch,
         status.ok() ? std::string("a write was fenced: this node no longer holds the election key")
                     : fmt::format("a write's outcome is unknown ({})", describe(status)),
         true);
  }
}

// ---- the snapshot writer ------------------------------------------------------

bool EtcdLog::save_snapshot(std::uint64_t epoch, std::uint64_t index, std::string last_key, std::string state) {
  std::lock_guard lock(snapshot_mutex_);
  if (snapshot_busy_ || !keys_.is_log_key(last_key)) return false;
  snapshot_busy_ = true;
  snapshot_job_ = SnapshotJob{epoch, index, std::move(last_key), std::move(state)};
  snapshot_cv_.notify_all();
  return true;
}

void EtcdLog::snapshot_loop() {
  while (true) {
    SnapshotJob job;
    {
      std::unique_lock lock(snapshot_mutex_);
      snapshot_cv_.wait(lock, [&] { return stopping_ || snapshot_job_.has_value(); });
      if (stopping_) return;
      job = std::move(*snapshot_job_);
      snapshot_job_.reset();
    }
    std::string error;
    const bool saved = write_snapshot(job.epoch, job.index, job.last_key, job.state, error);
    {
      std::lock_guard lock(snapshot_mutex_);
      snapshot_busy_ = false;
    }
    // A snapshot not saved is tried again later by the owner; the log still
    // holds everything it would have covered.
    if (saved) post(log_event::SnapshotSaved{job.index});
  }
}

bool EtcdLog::write_snapshot(std::uint64_t epoch, std::uint64_t index, const std::string& last_key,
                             const std::string& state, std::string& error) {
  SnapshotPointer pointer;
  pointer.index = index;
  pointer.bytes = state.size();
  pointer.chunks = static_cast<std::uint32_t>(std::max<std::size_t>(
      1, (state.size() + snapshot_chunk_bytes - 1) / snapshot_chunk_bytes));
  pointer.hash = fnv1a_64(state);
  // The chunks first, each fenced, so a deposed leader writes none.
  for (std::uint32_t chunk = 0; chunk < pointer.chunks; ++chunk) {
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = fence(epoch);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(keys_.chunk_key(index, chunk));
    put->set_value(state.substr(std::size_t{chunk} * snapshot_chunk_bytes, snapshot_chunk_bytes));
    etcdserverpb::TxnResponse response;
    const auto status = client_.txn(txn, response, config_.call_timeout);
    if (!status.ok() || !response.succeeded()) {
      error = status.ok() ? "fenced" : describe(status);
      return false;
    }
  }
  // Then, at once: the pointer, and the log and older snapshots it covers.
  // The old pointer is read first to learn its revision.
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = fence(epoch);
  txn.add_success()->mutable_request_range()->set_key(keys_.snapshot());
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(keys_.snapshot());
  put->set_value(encode_pointer(pointer));
  // Log keys sort in log order, so the entries through `index` are the keys
  // up to and including the one written at `index`.
  auto* drop_log = txn.add_success()->mutable_request_delete_range();
  drop_log->set_key(keys_.log_prefix());
  drop_log->set_range_end(last_key + '\0');
  auto* drop_chunks = txn.add_success()->mutable_request_delete_range();
  drop_chunks->set_key(keys_.chunks_prefix());
  drop_chunks->set_range_end(keys_.chunk_prefix(index));
  etcdserverpb::TxnResponse response;
  const auto status = client_.txn(txn, response, config_.call_timeout);
  if (!status.ok() || !response.succeeded()) {
    error = status.ok() ? "fenced" : describe(status);
    return false;
  }
  // etcd keeps every revision until compacted. Compacting up to the previous
  // snapshot leaves a node whose watch is behind one snapshot's worth of
  // history; one further behind syncs again from this snapshot.
  const auto& old = response.responses(0).response_range().kvs();
  if (!old.empty()) client_.compact(old[0].mod_revision(), config_.call_timeout);
  return true;
}

std::optional<std::uint64_t> EtcdLog::new_incarnation(std::string& error) {
  etcdserverpb::PutRequest request;
  request.set_key(keys_.incarnation());
  request.set_value(config_.self.node_id);
  etcdserverpb::PutResponse response;
  const auto status = client_.put(request, response, config_.call_timeout);
  if (!status.ok()) {
    error = describe(status);
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(response.header().revision());
}

}  // namespace lockstep::etcd
