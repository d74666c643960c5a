#include "sim/history/recorder.hpp"

#include <algorithm>

namespace lockstep::sim {

HistoryRecorder::HistoryRecorder(history::Header header) { history_.header = std::move(header); }

void HistoryRecorder::add(TimeMs at, history::EventKind kind, std::uint32_t connection, std::string_view line) {
  history_.events.push_back(history::Event{at.value * 1000, kind, connection, std::string(line)});
}

void HistoryRecorder::connect(TimeMs at, std::uint32_t connection) {
  open_.insert(connection);
  add(at, history::EventKind::connect, connection);
}

void HistoryRecorder::send(TimeMs at, std::uint32_t connection, std::string_view line) {
  if (open_.contains(connection)) add(at, history::EventKind::send, connection, line);
}

void HistoryRecorder::receive(TimeMs at, std::uint32_t connection, std::string_view line) {
  if (open_.contains(connection)) add(at, history::EventKind::recv, connection, line);
}

void HistoryRecorder::close(TimeMs at, std::uint32_t connection) {
  if (open_.erase(connection) > 0) add(at, history::EventKind::close, connection);
}

void HistoryRecorder::server_closed(TimeMs at, std::uint32_t connection) {
  if (open_.erase(connection) > 0) add(at, history::EventKind::eof, connection);
}

void HistoryRecorder::target_down(TimeMs at) {
  open_.clear();
  add(at, history::EventKind::down, 0);
}

void HistoryRecorder::target_up(TimeMs at) { add(at, history::EventKind::up, 0); }

void HistoryRecorder::finish(TimeMs at) {
  for (const auto connection : open_) add(at, history::EventKind::close, connection);
  open_.clear();
}

history::Header simulated_header(const SimParams& params, std::string target) {
  history::Header header;
  header.limits = params.limits;
  // A request reaches the server within the network's largest delay, and is
  // handled when it arrives; an answer reaches its client within one delay
  // of its cause, and a client's close reaches the server within one too.
  header.tolerance_ms = params.latency.max_ms.value;
  header.handled_within_ms = params.latency.max_ms.value;
  header.target = std::move(target);
  header.seed = params.seed;
  return header;
}

SimpleHistoryObserver::SimpleHistoryObserver(const SimParams& params, std::string target)
    : recorder_(simulated_header(params, std::move(target))) {}

void SimpleHistoryObserver::server_step(const ServerStep& step, const SimpleServerNode&) {
  if (step.action == ServerAction::restart) recorder_.target_up(step.at);
}

void SimpleHistoryObserver::world(TimeMs at, WorldEvent event, std::uint32_t, ConnectionId connection,
                                  std::string_view line) {
  const auto id = static_cast<std::uint32_t>(connection.value);
  switch (event) {
    case WorldEvent::connect: recorder_.connect(at, id); break;
    case WorldEvent::send: recorder_.send(at, id, line); break;
    case WorldEvent::receive: recorder_.receive(at, id, line); break;
    case WorldEvent::drop:
    case WorldEvent::crash: recorder_.close(at, id); break;  // a crash without a connection closes nothing
    case WorldEvent::server_down: recorder_.target_down(at); break;
    // A client learning that its connection died with the server, a message
    // lost on the way, a client coming back: nothing the history records.
    case WorldEvent::reset:
    case WorldEvent::lost:
    case WorldEvent::revive: break;
  }
}

history::Header cluster_header(const ClusterSimParams& params, std::string target) {
  history::Header header;
  header.mode = history::Mode::cluster;
  header.limits = params.limits;
  // A response reaches its client within the clients' largest delay of
  // being sent; when a node sends it is the cluster's business.
  header.tolerance_ms = params.client_latency_max_ms.value;
  header.clock_allowance_ms = 2 * params.skew_bound_ms.value;
  header.target = std::move(target);
  header.seed = params.raft.seed;
  return header;
}

ClusterHistoryRecorder::ClusterHistoryRecorder(const ClusterSimParams& params, std::string target)
    : recorder_(cluster_header(params, std::move(target))) {}

std::uint32_t ClusterHistoryRecorder::number(ConnectionId connection) {
  return numbers_.emplace(connection.value, static_cast<std::uint32_t>(numbers_.size() + 1)).first->second;
}

void ClusterHistoryRecorder::sent(TimeMs at, ConnectionId connection, std::string_view line) {
  const auto id = number(connection);
  recorder_.connect(at, id);
  recorder_.send(at, id, line);
}

void ClusterHistoryRecorder::received(TimeMs at, ConnectionId connection, std::string_view line) {
  recorder_.receive(at, number(connection), line);
}

void ClusterHistoryRecorder::closed_by_node(TimeMs at, ConnectionId connection) {
  recorder_.server_closed(at, number(connection));
}

void ClusterHistoryRecorder::finish(TimeMs at, std::int64_t lateness_ms) {
  recorder_.finish(at);
  recorder_.header().max_lateness_ms = std::max<std::int64_t>(lateness_ms, 0) + lateness_margin_ms;
}

void ClusterHistoryRecorder::given_up(TimeMs at, ConnectionId connection) { recorder_.close(at, number(connection)); }

}  // namespace lockstep::sim
