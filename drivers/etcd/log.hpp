// Cluster mode's replicated log, election and snapshots on etcd, for one
// node (a driver: it owns the threads that call etcd, and the node it feeds
// stays sans-IO). Keys and bytes are those of log_format.hpp.
//
// What etcd provides, and how:
// - The log. The leader writes the proposals waiting to be written as one
//   key, P/log/<epoch>/<n>, in a transaction that succeeds only while the
//   election key's create revision is its epoch: a deposed or paused
//   leader's writes fail inside etcd (the fence). One write is in flight at a
//   time, and every proposal made meanwhile waits for the next one (group
//   commit), so a leader's proposals reach the log in the order it made
//   them. An entry's index is the etcd revision that wrote it.
// - The order. Every node follows [P/leader, end of P/log/) with one etcd
//   watch, so it sees log entries and leader changes in etcd's revision order
//   and applies the same commands in the same order as every other node.
// - The election. A node campaigns by creating P/leader with a lease of
//   `leader_ttl_s`; the key's create revision is the epoch. The leader keeps
//   the lease alive and stops leading when it cannot have renewed it in time
//   (measured from when it sent its last successful keep-alive), when a write
//   is fenced, or when a write's outcome is unknown (then it also revokes the
//   lease, so no later write of its epoch can land after an unknown one).
// - Catching up and compaction. A node starts, and starts over after its
//   watch fell behind etcd's compaction, from the latest snapshot plus the
//   log entries after it. The leader writes a snapshot (in fenced chunks, then
//   a pointer), deletes the log entries it covers and older snapshots in the
//   pointer's transaction, and compacts etcd's history up to the previous
//   snapshot, so the log in etcd stays bounded.
//
// Events reach the owner through fd()/take_events() in this order: the
// first sync's Restored, Committed and leader events, then Ready (or Failed
// when etcd cannot be read within `start_timeout`); then, in etcd's order,
// Committed, LeaderSeen and LeaderGone (a Restored again if the watch fell
// behind a compaction); from the election, Elected and Deposed; from the
// proposer, ProposalsFailed (with a Deposed); from the snapshot writer,
// SnapshotSaved. A node leads at epoch E once it has both Elected{E} and
// LeaderSeen{E} (which the watch delivers after every entry before E) and
// no Deposed{E}.
//
// Every etcd call has a deadline (`call_timeout`); nothing waits without a
// bound. Threads: a watcher (with a pulse that asks a quiet watch for
// progress and restarts a silent one), an elector, a proposer and a snapshot
// writer, plus gRPC's own.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "drivers/etcd/client.hpp"
#include "drivers/etcd/event_queue.hpp"
#include "drivers/etcd/log_format.hpp"

namespace lockstep::etcd {

struct LogConfig {
  Target target;
  std::string prefix = "lockstep";
  LeaderRecord self;
  std::int64_t leader_ttl_s = 5;
  Timeout call_timeout{2'000};
  // How long the first sync may keep failing before the node gives up.
  Timeout start_timeout{5'000};
  std::size_t events_bytes_max = 64 << 20;
};

namespace log_event {
struct Restored {  // replace the applied state with the snapshot of `index`
  std::uint64_t index = 0;
  std::string state;
};
struct Committed {  // apply the entry at `index` (an etcd revision)
  std::uint64_t index = 0;
  std::string key;  // where it is kept, for save_snapshot
  std::string bytes;
};
struct Ready {};  // the first sync is done: what etcd held at start was delivered
struct LeaderSeen {
  std::uint64_t epoch = 0;
  LeaderRecord leader;
};
struct LeaderGone {};
struct Elected {
  std::uint64_t epoch = 0;
};
struct Deposed {
  std::uint64_t epoch = 0;
  std::string reason;
};
struct ProposalsFailed {  // not written, or written with an unknown outcome
  std::vector<std::uint64_t> ids;
};
struct SnapshotSaved {
  std::uint64_t index = 0;
};
struct Failed {  // the log cannot go on (etcd unreachable at start, a corrupt log)
  std::string reason;
};
}  // namespace log_event

using LogEvent = std::variant<log_event::Restored, log_event::Committed, log_event::Ready, log_event::LeaderSeen,
                              log_event::LeaderGone, log_event::Elected, log_event::Deposed,
                              log_event::ProposalsFailed, log_event::SnapshotSaved, log_event::Failed>;

class EtcdLog {
 public:
  explicit EtcdLog(LogConfig config);
  ~EtcdLog();
  EtcdLog(const EtcdLog&) = delete;
  EtcdLog& operator=(const EtcdLog&) = delete;

  // Starts the threads: the watcher syncs and follows; the elector campaigns.
  void start();
  // Resigns if leading (revokes the lease, so another node takes over at
  // once), then stops every thread. Idempotent.
  void stop();

  int fd() const { return events_.fd(); }
  std::vector<LogEvent> take_events() { return events_.take_all(); }

  // The leader's side, from the owner's thread: begin_epoch once it leads.
  void begin_epoch(std::uint64_t epoch);
  // Queues a proposal for the log. One of an epoch that is not (or no
  // longer) the one begun is reported at once in ProposalsFailed. The queue
  // has no bound of its own: the node bounds its requests in flight
  // (--max-in-flight), and its Expires and Timeouts by its table.
  void propose(std::uint64_t epoch, std::uint64_t id, std::string bytes);
  // Proposals queued or being written, for the owner's figures.
  std::size_t proposals_pending() const;
  // Writes a snapshot of the applied state at `index`, whose last entry is
  // kept at `last_key` (a Committed's key), then drops the log through it;
  // unless a snapshot is being written (then false).
  bool save_snapshot(std::uint64_t epoch, std::uint64_t index, std::string last_key, std::string state);
  // A revision no other call ever returned: names this run of the node.
  std::optional<std::uint64_t> new_incarnation(std::string& error);
  // The election key is gone: campaign now rather than at the next poll.
  void campaign_now();

  const Keys& keys() const { return keys_; }
  // Log entries this node wrote, and the proposals they carried: their
  // ratio is how many commands one etcd write took (group commit).
  std::uint64_t entries_written() const { return entries_written_.load(); }
  std::uint64_t proposals_written() const { return proposals_written_.load(); }

 private:
  void post(LogEvent event, std::size_t bytes = 64);
  void sleep_for(Timeout duration);

  // Watcher.
  void watch_loop();
  enum class SyncError { none, retry, corrupt };
  std::optional<std::int64_t> sync(std::string& error, SyncError& kind);
  bool sync_snapshot(std::string_view pointer_bytes, std::int64_t revision, std::string& error, SyncError& kind);
  std::optional<std::string> read_snapshot(const SnapshotPointer& pointer, std::int64_t revision, std::string& error,
                                           SyncError& kind);
  bool sync_log(std::int64_t revision, std::string& error, SyncError& kind);
  bool sync_leader(std::int64_t revision, std::string& error);
  void deliver_entry(const mvccpb::KeyValue& kv);
  void deliver_leader(const mvccpb::KeyValue* kv);
  void follow(std::int64_t from_revision);
  void pulse_loop();

  // Elector.
  void elect_loop();
  void campaign();
  void keep_leading();
  // Ends leadership at `epoch`: the proposer drops what waits (reported
  // failed), Deposed is posted, and the lease is revoked if `revoke`.
  void lose(std::uint64_t epoch, const std::string& reason, bool revoke);

  // Proposer and snapshot writer.
  void propose_loop();
  void snapshot_loop();
  bool write_snapshot(std::uint64_t epoch, std::uint64_t index, const std::string& last_key, const std::string& state,
                      std::string& error);
  etcdserverpb::Compare fence(std::uint64_t epoch) const;

  const LogConfig config_;
  const Keys keys_;
  Client client_;
  EventQueue<LogEvent> events_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> entries_written_{0};
  std::atomic<std::uint64_t> proposals_written_{0};
  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;

  // Watcher state (watcher thread only, but for the watch the pulse reads).
  std::uint64_t delivered_ = 0;  // the index of the last entry or snapshot delivered
  bool ready_ = false;
  std::optional<std::uint64_t> leader_epoch_seen_;  // so a resync does not repeat it
  std::mutex watch_mutex_;
  std::shared_ptr<Client::Watch> watch_;
  std::atomic<std::int64_t> watch_heard_ms_{0};

  // Elector state, under elect_mutex_.
  std::mutex elect_mutex_;
  std::condition_variable elect_cv_;
  bool nudged_ = false;
  std::int64_t lease_ = 0;
  std::uint64_t epoch_ = 0;  // 0: not leading
  std::chrono::steady_clock::time_point lease_valid_until_;
  std::chrono::steady_clock::time_point keep_alive_sent_;
  std::chrono::milliseconds lease_ttl_{0};

  // Proposer state, under propose_mutex_.
  struct Pending {
    std::uint64_t id = 0;
    std::string bytes;
  };
  mutable std::mutex propose_mutex_;
  std::condition_variable propose_cv_;
  std::uint64_t propose_epoch_ = 0;
  std::uint64_t lost_through_ = 0;  // every epoch up to it ended
  std::uint64_t writes_ = 0;        // the epoch's writes so far, which name its log keys
  std::deque<Pending> pending_;
  std::size_t in_flight_ = 0;

  // Snapshot writer state, under snapshot_mutex_.
  std::mutex snapshot_mutex_;
  std::condition_variable snapshot_cv_;
  struct SnapshotJob {
    std::uint64_t epoch = 0;
    std::uint64_t index = 0;
    std::string last_key;
    std::string state;
  };
  std::optional<SnapshotJob> snapshot_job_;
  bool snapshot_busy_ = false;

  std::vector<std::thread> threads_;
};

}  // namespace lockstep::etcd
