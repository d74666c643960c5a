// A one-node cluster that commits each proposal at the instant it is made
// (docs/protocol.md, "Cluster semantics in conformance vectors"): a thin driver of
// cluster::Node on its test clock, leading from the start, whose log is a
// counter. It offers the simple-mode engine's calls (on_line, on_close,
// advance, next_due), so that the vector runner replays `config
// mode=cluster` vectors against the node a real cluster runs, without
// consensus in between.
//
// Order within one instant: every call first moves the node's test clock to
// `now` (the node proposes what falls due instant by instant, Timeouts
// before Expires, each committed at once), then hands the node its input
// and commits what that proposes. There is no sweep.
//
// Requests without session fields are anonymous, as on any node; with them
// (`A ... <client> <seq>`), a retry is answered from its session.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "impl/cluster/node.hpp"
#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "impl/units.hpp"

namespace lockstep::cluster {

class OneNodeCluster {
 public:
  // Throws std::invalid_argument when the limits are not valid.
  explicit OneNodeCluster(Limits limits, Token first_token = Token{1}, ClusterBug bug = ClusterBug::none);

  // Returns close_connection when the node closed the connection (a line
  // over the length limit).
  LineOutcome on_line(ConnectionId connection, std::string_view line, TimeMs now, Outputs& out);
  // The connection closed: a Close command drops its waiters silently.
  void on_close(ConnectionId connection, TimeMs now, Outputs& out);
  // Commits what is due at instants up to `now`.
  void advance(TimeMs now, Outputs& out);
  // The next instant the node's heap may yield a command at.
  std::optional<TimeMs> next_due() const { return node_.next_due(); }

  const Node& node() const { return node_; }
  // The node's invariants; throws InvariantViolation.
  void check_invariants() const;

 private:
  // Commits every proposal at once, as the next log index, until the node
  // proposes nothing more; the responses go to `out`. Returns whether the
  // node closed `watched`.
  bool commit_all(NodeOutputs& outputs, Outputs& out, ConnectionId watched = {});

  Node node_;
  LogIndex index_ = 0;
};

}  // namespace lockstep::cluster
