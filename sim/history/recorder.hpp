// The clients' view of a simulated run as a history of the black-box
// checker (check, schema `lockstep.history/1`): what each
// connection sent and received and when, on the simulated clock
// (t_us = simulated ms × 1000), the connections the clients closed, and the
// server's deaths and restarts. Checking these histories measures how much
// of what the simulator's own checkers see a real-time tester sees.
//
// HistoryRecorder knows nothing of the world that feeds it:
// SimpleHistoryObserver feeds it from simple mode's observer events, and
// ClusterHistoryRecorder from the cluster simulator's clients. Like every
// observer, neither changes the run.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "check/history.hpp"
#include "sim/cluster/simulation.hpp"
#include "sim/simple/observer.hpp"
#include "sim/simple/params.hpp"

namespace lockstep::sim {

class HistoryRecorder {
 public:
  explicit HistoryRecorder(history::Header header);

  void connect(TimeMs at, std::uint32_t connection);
  void send(TimeMs at, std::uint32_t connection, std::string_view line);
  void receive(TimeMs at, std::uint32_t connection, std::string_view line);
  // The client closed the connection (or dropped it, or died).
  void close(TimeMs at, std::uint32_t connection);
  // The server closed it (or it broke).
  void server_closed(TimeMs at, std::uint32_t connection);
  // The target died: every connection ends with it; what its clients send
  // or receive on them afterwards is left out (the history's `down` ends
  // them, and a response still in flight may go unseen).
  void target_down(TimeMs at);
  void target_up(TimeMs at);
  // The end of the run: the connections still open were watched until `at`.
  void finish(TimeMs at);

  const history::History& history() const { return history_; }
  history::Header& header() { return history_.header; }

 private:
  void add(TimeMs at, history::EventKind kind, std::uint32_t connection, std::string_view line = {});

  history::History history_;
  std::set<std::uint32_t> open_;  // ordered: finish closes them in a stable order
};

// The tolerance a simulated run needs: a deferred answer reaches its client
// within the network's largest delay of its cause.
history::Header simulated_header(const SimParams& params, std::string target);

class SimpleHistoryObserver final : public Observer {
 public:
  explicit SimpleHistoryObserver(const SimParams& params, std::string target);

  void server_step(const ServerStep& step, const SimpleServerNode& server) override;
  void world(TimeMs at, WorldEvent event, std::uint32_t client, ConnectionId connection,
             std::string_view line) override;

  HistoryRecorder& recorder() { return recorder_; }

 private:
  HistoryRecorder recorder_;
};

// The clients' view of a cluster run (sim/cluster/simulation.hpp), as a history
// read as a cluster's (`"mode":"cluster"`): the clock allowance is the
// run's 2·S, the tolerance the clients' largest network delay, no bound on
// when a request is handled (a commit may wait for a leader), and as the
// maximum lateness what the run really had (ClusterRunResult::lateness_ms,
// sim/cluster/lateness.hpp) and a margin: the checker is refused any
// explanation that needs more lateness than happened. Connections are
// numbered in the order they are first used.
class ClusterHistoryRecorder final : public ClusterClientObserver {
 public:
  ClusterHistoryRecorder(const ClusterSimParams& params, std::string target);

  void sent(TimeMs at, ConnectionId connection, std::string_view line) override;
  void received(TimeMs at, ConnectionId connection, std::string_view line) override;
  void closed_by_node(TimeMs at, ConnectionId connection) override;
  void given_up(TimeMs at, ConnectionId connection) override;
  // The end of the run, and how late it really was.
  void finish(TimeMs at, std::int64_t lateness_ms);

  const history::History& history() const { return recorder_.history(); }

 private:
  std::uint32_t number(ConnectionId connection);

  HistoryRecorder recorder_;
  std::map<std::uint64_t, std::uint32_t> numbers_;
};

history::Header cluster_header(const ClusterSimParams& params, std::string target);

// What a cluster history's max_lateness_ms adds to the lateness its run
// really had: the measure is exact on the simulator's millisecond grid, and
// this only absorbs the checker's rounding of an instant to its millisecond.
inline constexpr std::int64_t lateness_margin_ms = 1;

}  // namespace lockstep::sim
