#include "sim/raft/checker.hpp"

#include <fmt/format.h>

namespace lockstep::sim {

std::uint64_t entry_digest(const raft::Entry& entry) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  const auto mix = [&](std::uint64_t byte) {
    hash ^= byte;
    hash *= 0x100000001b3ULL;
  };
  mix(static_cast<std::uint64_t>(entry.kind));
  for (const char c : entry.data) mix(static_cast<unsigned char>(c));
  return hash;
}

void RaftChecker::fail(std::string checker, std::string what) {
  ++violation_count_;
  if (violations_.size() < 20) violations_.push_back({now_, std::move(checker), std::move(what)});
}

void RaftChecker::on_durable(raft::NodeId node, const raft::HardState& before, const raft::HardState& after) {
  if (after.term < before.term) {
    fail("durable-monotonic", fmt::format("node {} persisted term {} after term {}", node, after.term, before.term));
  } else if (after.term == before.term && before.vote != raft::node_none && after.vote != before.vote) {
    fail("durable-monotonic",
         fmt::format("node {} persisted vote {} in term {} after voting {}", node, after.vote, after.term, before.vote));
  }
}

void RaftChecker::on_entries(const raft::RaftNode& node, const std::vector<raft::Entry>& entries) {
  for (const auto& e : entries) {
    const auto value = std::pair{entry_digest(e), node.term_at(e.index - 1)};
    const auto [at, inserted] = entries_.emplace(std::pair{e.index, e.term}, value);
    if (!inserted && at->second != value) {
      fail("log-matching", fmt::format("node {} holds a different entry or predecessor at index {} term {}", node.id(),
                                       e.index, e.term));
    }
  }
}

void RaftChecker::on_applied(const raft::RaftNode& node, const raft::Entry& e) {
  if (e.index > node.commit()) {
    fail("apply-before-commit", fmt::format("node {} applied index {} with its commit index at {}", node.id(), e.index,
                                            node.commit()));
  }
  const auto value = std::pair{e.term, entry_digest(e)};
  const auto [at, inserted] = applied_.emplace(e.index, value);
  if (!inserted && at->second != value) {
    fail("state-machine-safety", fmt::format("node {} applied term {} at index {}, another node applied term {} there",
                                             node.id(), e.term, e.index, at->second.first));
  }
}

void RaftChecker::on_send_unsynced(raft::NodeId node) {
  fail("persist-before-send", fmt::format("node {} sent with writes not yet synced", node));
}

void RaftChecker::on_send(const raft::PersistedState& durable, const raft::Message& m) {
  using raft::MessageType;
  // A pre-vote and its answer speak of the next term, which nobody persisted.
  if (m.type == MessageType::pre_vote || m.type == MessageType::pre_vote_response) return;
  const auto& hard = durable.hard_state;
  if (m.term > hard.term) {
    fail("persist-before-send",
         fmt::format("node {} sent {} of term {} with term {} on disk", m.from, raft::message_type_name(m.type), m.term,
                     hard.term));
  } else if (m.type == MessageType::vote_response && m.granted && hard.vote != m.to) {
    fail("persist-before-send", fmt::format("node {} granted its vote to {} in term {} with vote {} on disk", m.from,
                                            m.to, m.term, hard.vote));
  } else if (m.type == MessageType::append_response && m.granted) {
    const auto last = durable.entries.empty() ? durable.snapshot.index : durable.entries.back().index;
    if (m.match_index > last) {
      fail("persist-before-send",
           fmt::format("node {} acknowledged index {} with its log on disk ending at {}", m.from, m.match_index, last));
    }
  }
}

void RaftChecker::check_leader_holds(const raft::RaftNode& leader, raft::Index index, raft::Term term) {
  if (term >= leader.term()) return;
  if (index <= leader.snapshot().index) return;  // compacted: committed by definition
  if (index > leader.last_index() || leader.term_at(index) != term) {
    fail("leader-completeness", fmt::format("leader {} of term {} lacks index {} of term {}, committed earlier", leader.id(),
                                            leader.term(), index, term));
  }
}

void RaftChecker::after_event(const std::vector<const raft::RaftNode*>& live, TimeMs at) {
  now_ = at;
  for (const auto* node : live) {
    // commit-monotonic, and collect what became committed
    const auto id = node->id();
    if (node->commit() < last_commit_[id]) {
      fail("commit-monotonic", fmt::format("node {} commit index went from {} to {}", id, last_commit_[id], node->commit()));
    }
    for (auto i = std::max(last_commit_[id], node->snapshot().index) + 1; i <= node->commit(); ++i) {
      const auto term = node->term_at(i);
      const auto [where, inserted] = committed_.emplace(i, term);
      if (!inserted && where->second != term) {
        fail("state-machine-safety",
             fmt::format("node {} committed term {} at index {}, another node committed term {}", id, term, i, where->second));
      }
      if (inserted) {
        for (const auto* other : live) {
          if (other->role() == raft::Role::leader) check_leader_holds(*other, i, term);
        }
      }
    }
    const bool commit_moved = node->commit() > last_commit_[id];
    last_commit_[id] = std::max(last_commit_[id], node->commit());
    if (node->role() != raft::Role::leader) continue;
    // Counting replicas proves only an entry of the leader's own term
    // committed; earlier terms' entries commit with it (Figure 8).
    if (commit_moved && node->term_at(node->commit()) != node->term()) {
      fail("commit-current-term", fmt::format("leader {} of term {} moved its commit index to index {} of term {}", id,
                                              node->term(), node->commit(), node->term_at(node->commit())));
    }
    const auto [where, inserted] = leaders_.emplace(node->term(), id);
    if (!inserted && where->second != id) {
      fail("election-safety", fmt::format("nodes {} and {} are both leaders of term {}", where->second, id, node->term()));
    }
    if (inserted) {
      for (const auto& [index, term] : committed_) check_leader_holds(*node, index, term);
    }
  }
}

}  // namespace lockstep::sim
