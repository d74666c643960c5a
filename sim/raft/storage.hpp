// A Raft node's simulated disk. Writes go to a buffer first and reach the
// durable state only when synced; a crash drops the buffer, so a node that
// crashes between writing and syncing restarts without those writes. The
// cluster writes a Ready's persistent part, syncs, and only then sends: the
// `unsynced()` check before each send is the simulator's assertion of
// "persist before send".
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "impl/raft/node.hpp"
#include "impl/raft/types.hpp"

namespace lockstep::sim {

class RaftStorage {
 public:
  void write(const raft::Ready& ready) {
    if (!ready.must_persist()) return;
    Pending p;
    p.hard_state = ready.hard_state;
    p.snapshot = ready.snapshot;
    p.log_from = ready.log_from;
    p.entries = ready.entries;
    pending_.push_back(std::move(p));
  }

  void sync() {
    for (auto& p : pending_) {
      if (p.hard_state) durable_.hard_state = *p.hard_state;
      if (p.snapshot) {
        std::erase_if(durable_.entries, [&](const raft::Entry& e) { return e.index <= p.snapshot->index; });
        durable_.snapshot = *p.snapshot;
      }
      if (p.log_from) {
        std::erase_if(durable_.entries, [&](const raft::Entry& e) { return e.index >= *p.log_from; });
        for (auto& e : p.entries) durable_.entries.push_back(std::move(e));
      }
      ++syncs_;
    }
    pending_.clear();
  }

  void crash() { pending_.clear(); }
  bool unsynced() const { return !pending_.empty(); }
  const raft::PersistedState& durable() const { return durable_; }
  std::uint64_t syncs() const { return syncs_; }

 private:
  struct Pending {
    std::optional<raft::HardState> hard_state;
    std::optional<raft::Snapshot> snapshot;
    std::optional<raft::Index> log_from;
    std::vector<raft::Entry> entries;
  };
  raft::PersistedState durable_;
  std::vector<Pending> pending_;
  std::uint64_t syncs_ = 0;
};

}  // namespace lockstep::sim
