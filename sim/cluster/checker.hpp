// The lock checkers of cluster mode, judged after every apply on every node
// and at every response a client receives (docs/protocol.md, "Properties every
// layer is checked against"; spec/LockCluster.tla's invariants):
//   replica-agreement  the nodes that applied one log index hold the same
//                      state of the key it touched, the same next token and
//                      the same clock
//   model-agreement    the first application of every entry answers what
//                      the sequential cluster model (model/cluster_model,
//                      sessions and leader changes included) answers to the
//                      same command; at the end, a node that applied every
//                      entry holds the model's table
//   linearizability    every answer a client receives is its request's answer
//                      at the request's log position, and only once that
//                      position was applied: the log order is a
//                      linearization, checked against the model
//   tokens             a grant's token is above every token granted at a lower
//                      log index, on any key and across leader changes, so no
//                      two grants share one
//   fifo               a hand-off grants the oldest waiter not yet due and
//                      still attached to the table's leadership
//   no-ghost-grant     a hand-off grants a waiter only if the latest copy of
//                      its request that was applied came from the newest
//                      leadership applied: its client listens there (a
//                      leader change closed the connections of the ones
//                      before; docs/protocol.md, "Waiters and leader changes")
//   no-lost-grant      a grant ends only by a Release or an Expire of its token
//   expire-valid       an Expire ends a grant only with its token and only at
//                      or after its expiry on the proposing leader's clock
//   lease-safety       a key's next grant is first applied no earlier than 2·S
//                      before the lease end the previous holder counts from its
//                      first send, unless it released (S: the configured skew
//                      bound; spec/README.md, "Lease safety: the bound")
// The rule checkers judge the table's own state before and after each apply,
// before the model's answers are compared: a bug that bends one rule is
// reported by that rule's checker first, and model-agreement catches what no
// rule names. deadline-heap (a leader's heap holds every deadline of its
// applied state) is checked by sim/cluster/workload.cpp on the leader's ticks.
// Violations go to the Raft checker's list, so one run has one verdict.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/cluster/commands.hpp"
#include "impl/cluster/lock_machine.hpp"
#include "impl/protocol.hpp"
#include "impl/raft/types.hpp"
#include "model/cluster_model.hpp"
#include "sim/raft/checker.hpp"

namespace lockstep::sim {

// Owners name their request in cluster mode, so any A, T or B names the
// session it answers: `c<client>s<sequence>`.
std::string session_owner(const cluster::Session& session);
std::optional<cluster::Session> owner_session(std::string_view owner);

class ClusterChecker {
 public:
  ClusterChecker(RaftChecker& raft, Limits limits, cluster::SessionLimits sessions, DurationMs skew_bound_ms);

  // A client sent (or re-sent) a request at global time `at`.
  void on_send(const cluster::Session& session, DurationMs lease_ms, TimeMs at);
  // Around one node's apply of one command of log entry `index`
  // (cluster::ApplyObserver's calls). `now` is global time.
  void before_command(raft::NodeId node, raft::Index index, const cluster::Command& command,
                      const cluster::LockMachine& machine);
  void after_command(raft::NodeId node, raft::Index index, const cluster::Command& command,
                     const cluster::LockMachine& machine, const cluster::Applied& applied, TimeMs now);
  // After one node applied the whole entry `index` (a no-op included).
  void entry_applied(raft::NodeId node, raft::Index index);
  // A node restored a snapshot (or restarted from one).
  void on_restore(raft::NodeId node) { (void)node; }
  // A client received `response` on its current connection while waiting
  // for `outstanding`; returns true when it answers that request.
  // `reuses`: the request reuses the number of the client's last one for
  // another request (its answer is the `E` of a reused session).
  bool on_response(const cluster::Session& outstanding, bool outstanding_is_release, Token release_token,
                   const Response& response, TimeMs now, bool reuses = false);
  // At the end: the model's whole table against a node's, if that node
  // applied the same prefix (else nothing is compared).
  void compare_final(raft::NodeId node, const cluster::LockMachine& machine);

  raft::Index model_index() const { return model_index_; }
  std::uint64_t expires_applied() const { return expires_applied_; }
  std::uint64_t timeouts_applied() const { return timeouts_applied_; }

 private:
  struct SessionInfo {
    TimeMs first_sent{0};
    DurationMs lease_ms{0};
    std::optional<Response> answer;  // the model's answer, once given
    raft::Index answered_at = 0;
    // The epoch of the latest copy of its Acquire applied: where its client
    // listens for a waiter's answer.
    std::uint64_t epoch = 0;
    std::optional<Response> reused;  // the answer to a request that reused this number
  };
  struct KeyBefore {
    bool held = false;
    Token token;
    TimeMs expiry{0};
    std::string owner;
    TimeMs clock{0};
    // The waiter a hand-off at this entry's instant must grant, if any.
    std::optional<std::string> head_owner;
    std::uint64_t epoch = 0;  // the table's after this command (before its effects)
  };
  struct Grant {
    Token token;
    std::string owner;
    TimeMs counted_end{0};  // the holder's lease end, counted from its first send
    bool released = false;
  };

  // One node's apply of one command that touches `key`.
  struct Apply {
    raft::NodeId node;
    raft::Index index;
    const cluster::Command& command;
    const std::string& key;
    bool first;  // the first node to apply this index
    TimeMs now;  // global time
  };

  void fail(const char* checker, std::string what);
  std::uint64_t key_digest(const cluster::LockMachine& machine, const std::string& key) const;
  // replica-agreement; false when it failed.
  bool agrees_with_first(const Apply& apply, const cluster::LockMachine& machine);
  // expire-valid, no-lost-grant, fifo on every node; no-ghost-grant, tokens
  // and lease-safety on a grant's first application.
  void check_transition(const Apply& apply, const KeyBefore& before, const cluster::LockMachine& machine,
                        const cluster::Applied& applied);
  void check_grant(const Apply& apply, const cluster::LockMachine::KeyState& granted);
  // model-agreement: the first application of an entry against the model.
  void first_application(const cluster::Command& command, raft::Index index, const cluster::Applied& applied);
  std::vector<Outbound> expected_for(const cluster::Command& command, raft::Index index);
  SessionInfo& info(const cluster::Session& session) { return sessions_[session]; }
  void trim_sessions(const std::string& client, std::uint64_t sequence);
  // no-ghost-grant, on a hand-off's first application; false when it failed.
  bool granted_to_listener(const Apply& apply, std::string_view owner);

  RaftChecker& raft_;
  cluster::SessionLimits session_limits_;
  DurationMs skew_bound_ms_;
  model::ClusterModel model_;
  raft::Index model_index_ = 0;
  Token max_granted_{0};
  std::map<raft::Index, std::uint64_t> digests_;  // index -> digest of the touched key's state
  std::map<cluster::Session, SessionInfo> sessions_;
  std::map<std::string, std::uint64_t> highest_applied_;  // client -> highest sequence applied
  std::uint64_t highest_epoch_ = 0;                         // of a command applied
  std::map<std::string, Grant> last_grant_;
  std::optional<KeyBefore> before_;
  std::uint64_t expires_applied_ = 0, timeouts_applied_ = 0;
};

}  // namespace lockstep::sim
