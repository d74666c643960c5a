// One node of a lock-service cluster, sans IO (docs/protocol.md, "Cluster mode"
// and "Cluster nodes on the wire"): everything a node does above consensus,
// written once and driven by two drivers: the simulator over our Raft
// (sim/cluster/workload.hpp, the term as the epoch) and the server over etcd (the
// election key's create revision as the epoch). A one-node cluster that
// commits each proposal at once (one_node.hpp) is a third, for the vectors.
//
// What the node owns: the replicated lock table (LockMachine) fed with the
// committed log, the client connections it serves (it parses their lines,
// stamps each request with its clock, proposes it while it leads and answers
// only once the command is applied), the leader's deadline heap (rebuilt
// from the applied table when leadership is gained, dropped when it is
// lost; the due Expires and Timeouts proposed at each tick, and again only
// when the driver reports their proposal failed), redirects (`E not-leader <host>:<port>` or
// `E not-leader`), the test clock (`C`, `X`), and the snapshot/compaction
// decision. What it does not own: consensus, sockets, clocks, disks. It
// never reads a clock, does no IO, starts no thread, and nothing it outputs
// depends on unordered iteration: the same inputs give the same outputs.
//
// INPUTS, each a call that appends what it produced to a NodeOutputs:
//   on_connect     a connection was accepted (optional: a connection is also
//                  known from its first line; the test clock's markers go to
//                  every connection known)
//   on_line        one client line, without its `\n`
//   on_close       the peer closed the connection (a leader proposes Close
//                  for its waiters)
//   on_committed   one committed log entry: index (strictly increasing, gaps
//                  allowed) and bytes, in log order, on every node, leader
//                  or not. The bytes are the concatenation of zero or more
//                  proposals' bytes (empty: nothing to apply, e.g. a Raft
//                  no-op), so a driver may put several proposals of one
//                  epoch in one entry (group commit)
//   on_leadership_gained / on_leadership_lost   with an epoch that increases
//                  across leaders; gaining a new epoch while leading first
//                  loses the old one
//   on_leader_address   the current leader's client address, "" if unknown
//   on_proposal_failed  a proposal that the driver did not or could not get
//                  committed (its epoch is no longer current, consensus
//                  refused it, or its fate is unknown)
//   on_tick        the node's clock; a leader proposes what is due by it
//   restore        the applied state from a snapshot (start-up, catch-up)
//
// OUTPUTS (NodeOutputs), to be handled in this order:
//   1. `proposals`, in order: propose each while its epoch is current (a
//      driver fences on it: a deposed leader's proposal must not commit) and
//      keep their order in the log; one that cannot be proposed or whose
//      fate is unknown is reported with on_proposal_failed;
//   2. `to_clients`, in order: response lines, test-clock markers and
//      connection closes. Every response is of a command that is committed
//      and applied (the answer-before-commit bug aside). A close means: send
//      what came before it on that connection, then close it; the node has
//      already forgotten the connection;
//   3. `compaction`: a snapshot of the applied state at an index; store it,
//      after which the log through that index may be dropped.
//
// Who proposes what: the leader proposes each request it reads (stamped
// with its clock, after what its heap has due by then), the due Expires and
// Timeouts of its heap, and a Close for
// a connection that ends with waiters or requests in flight. A follower
// proposes nothing: it answers requests with a redirect. A node that loses
// leadership with requests in flight cannot tell whether they will commit,
// so it closes their connections (the client retries with its session
// elsewhere); a failed proposal closes its requests' connections too. It
// also closes the connections of its waiters: a waiter waits on the
// leader's connection, and the next leadership's first command detaches it
// until its client's retry attaches it again on the new leader (no ghost
// grants: lock_machine.hpp).
//
// Sessions: `A ... <client> <seq>` / `R ... <client> <seq>` carry the
// client's session into the log, so a retry applies at most once. A request
// without session fields is anonymous: applied as it comes, never recorded
// (its client loses only at-most-once retries).
//
// Connection ids must be unique across the cluster and over its whole life
// (e.g. node id, incarnation and a counter): commands carry them, and a
// node delivers a response only to a connection it has open. Once the node
// outputs a close for a connection it has forgotten it: feed it no more
// lines (a line on an unknown id opens a new connection).
//
// Test clock (NodeConfig::test_clock): the node's clock starts at 0 and
// moves only by `C <now_ms>` (or advance_test_clock); the `now` of the other
// inputs is ignored. On `C t` the leader proposes, instant by instant up to
// t, the commands due at that instant (Timeouts, then Expires, stamped with
// the instant), each instant once everything before it is applied; lines
// read meanwhile are held (in order, at most held_lines_max) and handled at
// t afterwards. When nothing is due by t and every request read before the
// `C` is applied, it sends `C t` on every connection it knows, after that
// connection's responses. `X` drops the connection's waiters (a Close) and
// closes it once the Close is applied; lines after it are discarded.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "impl/cluster/bugs.hpp"
#include "impl/cluster/commands.hpp"
#include "impl/cluster/deadlines.hpp"
#include "impl/cluster/lock_machine.hpp"
#include "impl/cluster/sessions.hpp"
#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "impl/units.hpp"

namespace lockstep::cluster {

// A log position as the driver numbers it (Raft index, etcd revision).
using LogIndex = std::uint64_t;

// One leadership: increases from one leader to the next (Raft term, or the
// create revision of etcd's election key).
struct Epoch {
  std::uint64_t value = 0;
  friend auto operator<=>(Epoch, Epoch) = default;
};

struct NodeConfig {
  Limits limits;
  SessionLimits sessions;  // window and clients_max, stated at start-up
  Token first_token{1};
  ClusterBug bug = ClusterBug::none;
  bool test_clock = false;
  // How long a waiter detached by a leader change is kept for its client's
  // retry (lock_machine.hpp, "No ghost grants"): the leader drops it this
  // long after the detachment. 0 .. waiter_grace_max.
  DurationMs waiter_grace_ms = waiter_grace_default;
  // Requests proposed and not yet applied, over all connections; past it a
  // request is answered `E too many requests in flight`.
  std::uint64_t in_flight_max = 65'536;
  // Test clock: lines held while a `C` is in progress; past it `E`.
  std::uint64_t held_lines_max = 65'536;
  // Compaction: a snapshot is taken once this many log positions were
  // applied since the last one (0: never), and offered as `compaction` once
  // log_keep_entries more were applied (slow followers still find those).
  std::uint64_t snapshot_every_entries = 0;
  std::uint64_t log_keep_entries = 0;
};

// Throws nothing; returns why the configuration is not valid.
std::optional<std::string> validate(const NodeConfig& config);

struct Proposal {
  std::uint64_t id = 0;  // increasing per node; names it in on_proposal_failed
  Epoch epoch;           // the leadership it was made under
  // One framed command. The concatenation of several proposals' bytes is
  // itself valid entry bytes (see on_committed).
  std::string bytes;
};

struct ToClient {
  enum class Kind : std::uint8_t {
    response,      // send `response`
    clock_marker,  // send `C <marker>`
    close,         // close the connection after what came before
  };
  ConnectionId connection;
  Kind kind = Kind::response;
  Response response;
  TimeMs marker;
};

// The wire line of a response or a marker (not of a close), without `\n`.
std::string to_client_line(const ToClient& message);

// The applied state at `index`, as bytes only this code reads back.
struct TableSnapshot {
  LogIndex index = 0;
  std::string bytes;
};

struct NodeOutputs {
  std::vector<Proposal> proposals;
  std::vector<ToClient> to_clients;
  std::optional<TableSnapshot> compaction;
};

struct NodeStats {
  std::uint64_t requests_proposed = 0;
  std::uint64_t redirects = 0;
  std::uint64_t expires_proposed = 0, timeouts_proposed = 0, closes_proposed = 0;
  std::uint64_t proposals_failed = 0;
  std::uint64_t connections_closed_unknown = 0;  // closed: a request's fate could not be told
  std::uint64_t connections_closed_waiting = 0;  // closed on stepping down: a waiter's, for its retry
  std::uint64_t snapshots = 0;                   // compactions offered
};

// Watches every command the node applies, for checkers outside it; it must
// not change what the node does.
class ApplyObserver {
 public:
  virtual ~ApplyObserver() = default;
  virtual void before_command(LogIndex index, const Command& command, const LockMachine& machine) = 0;
  virtual void after_command(LogIndex index, const Command& command, const LockMachine& machine,
                             const Applied& applied) = 0;
};

class Node {
 public:
  // Throws std::invalid_argument when validate(config) finds an error.
  explicit Node(NodeConfig config);

  void on_connect(ConnectionId connection, NodeOutputs& out);
  void on_line(ConnectionId connection, std::string_view line, TimeMs now, NodeOutputs& out);
  void on_close(ConnectionId connection, TimeMs now, NodeOutputs& out);
  // Entries whose bytes do not decode change nothing but the applied index
  // (counted in rejected_commands()); every replica rejects them alike.
  void on_committed(LogIndex index, std::string_view bytes, NodeOutputs& out);
  void on_leadership_gained(Epoch epoch, TimeMs now, NodeOutputs& out);
  void on_leadership_lost(NodeOutputs& out);
  void on_leader_address(std::string address);
  void on_proposal_failed(std::uint64_t proposal, NodeOutputs& out);
  void on_tick(TimeMs now, NodeOutputs& out);
  // Test clock only: what `C now` does, without the markers.
  void advance_test_clock(TimeMs now, NodeOutputs& out);

  // The applied state at applied(), and its restoration (which also drops
  // the deadline heap's state if leading: it is rebuilt from the table).
  // restore throws std::invalid_argument on bytes that do not decode or
  // break an invariant, and then changes nothing.
  TableSnapshot snapshot() const;
  void restore(const TableSnapshot& snapshot, NodeOutputs& out);

  LogIndex applied() const { return machine_.applied(); }
  bool leading() const { return leading_; }
  Epoch epoch() const { return epoch_; }
  // A stable hash (64-bit FNV-1a of the snapshot bytes) of the whole
  // replicated state at applied(): equal on replicas at one index.
  std::uint64_t digest() const;
  // When the driver should call on_tick next, if anything is due (leader).
  std::optional<TimeMs> next_due() const;
  TimeMs test_clock_now() const { return test_now_; }
  const LockMachine& machine() const { return machine_; }
  const DeadlineHeap& heap() const { return heap_; }
  const NodeStats& stats() const { return stats_; }
  std::uint64_t rejected_commands() const { return machine_.rejected_entries(); }
  std::size_t in_flight() const { return in_flight_total_; }
  const NodeConfig& config() const { return config_; }

  // For checkers (sim/cluster/checker): null to stop watching.
  void set_observer(ApplyObserver* observer) { observer_ = observer; }
  // The node's own invariants and the table's and heap's; throws
  // InvariantViolation.
  void check_invariants() const;

 private:
  struct Connection {
    std::uint64_t in_flight = 0;  // its requests proposed in this leadership, not yet applied
    bool ending = false;          // `X` read: later lines are discarded; closed once its Close applies
  };
  // A proposal of the current leadership that has not come back applied.
  struct Pending {
    enum class Kind : std::uint8_t { request, deadline, close };
    Kind kind = Kind::request;
    ConnectionId connection;  // request, close
    DeadlineTarget target;    // deadline
  };
  struct HeldLine {
    ConnectionId connection;
    std::string line;
  };
  // A `C` (or advance_test_clock) in progress: due commands are proposed
  // instant by instant from `floor` up to `target`.
  struct ClockAdvance {
    TimeMs target;
    TimeMs floor;
    bool markers = false;
  };

  void handle_line(ConnectionId connection, std::string_view line, TimeMs now, NodeOutputs& out);
  void handle_request(ConnectionId connection, const SessionRequest& parsed, TimeMs now, NodeOutputs& out);
  void handle_clock_line(ConnectionId connection, std::string_view line, NodeOutputs& out);
  // `X` or an overlong line: the connection's waiters are dropped (a Close,
  // when leading) and it is closed once that is applied.
  void end_connection(ConnectionId connection, NodeOutputs& out);
  // Closes a connection now and forgets it.
  void close_now(ConnectionId connection, NodeOutputs& out);
  void propose(const Command& command, Pending pending, NodeOutputs& out);
  void propose_due(TimeMs now, NodeOutputs& out);
  void propose_owed_closes(TimeMs now, NodeOutputs& out);
  // One of this leadership's proposals came back applied.
  void settle(const Pending& pending, NodeOutputs& out);
  void lose_leadership(NodeOutputs& out);
  // Test clock: moves the advance in progress on as far as it can, then
  // handles held lines, until it must wait for an apply or nothing is left.
  void continue_clock(NodeOutputs& out);
  void decide_compaction(NodeOutputs& out);
  TimeMs stamp(TimeMs now) const { return config_.test_clock ? test_now_ : now; }

  NodeConfig config_;
  LockMachine machine_;
  DeadlineHeap heap_;
  bool leading_ = false;
  bool has_led_ = false;  // for the serve-without-leadership bug only
  Epoch epoch_;
  std::string leader_address_;
  std::map<ConnectionId, Connection> connections_;
  std::map<std::uint64_t, Pending> pending_;  // proposal id -> what it carries; this leadership only
  std::uint64_t next_proposal_ = 1;
  std::size_t in_flight_total_ = 0;         // pending requests
  std::set<ConnectionId> closes_owed_;      // Closes whose proposal failed: again at the next tick
  TimeMs test_now_{0};
  std::optional<ClockAdvance> advancing_;
  std::deque<HeldLine> held_;
  std::optional<TableSnapshot> stash_;      // taken, not yet offered for compaction
  LogIndex last_snapshot_index_ = 0;
  NodeStats stats_;
  ApplyObserver* observer_ = nullptr;
};

}  // namespace lockstep::cluster
