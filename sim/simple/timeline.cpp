#include "sim/simple/timeline.hpp"

#include <algorithm>
#include <set>

#include "sim/simple/server_node.hpp"

namespace lockstep::sim {

namespace {

// The key and token an input line names, without a full parse.
std::string line_key(std::string_view line) {
  if (line.size() < 3) return {};
  const auto end = line.find(' ', 2);
  return std::string(line.substr(2, end == std::string_view::npos ? std::string_view::npos : end - 2));
}

}  // namespace

void TimelineRecorder::server_step(const ServerStep& step, const SimpleServerNode& server) {
  if (step.action == ServerAction::restart) {
    for (auto& [key, track] : tracks_) {
      if (track.held) bars_.push_back({key, true, track.start, step.at, track.owner, track.token, "restart", track.expiry});
      for (const auto& w : track.waiting) bars_.push_back({key, false, w.start, step.at, w.owner, {}, "restart", w.deadline});
    }
    tracks_.clear();
    marks_.push_back({{}, step.at, "restart"});
    return;
  }
  std::set<std::string> touched;
  if (step.action == ServerAction::acquire || step.action == ServerAction::release) touched.insert(line_key(step.line));
  for (std::size_t i = step.first; i < step.out.size(); ++i) touched.insert(step.out[i].response.key);
  const bool sweep_instant = step.action == ServerAction::tick && step.at.value % params_.limits.sweep_ms.value == 0;
  if (sweep_instant || step.action == ServerAction::close) {
    // The sweep deletes silently, and a close drops waiters silently.
    for (const auto& [key, track] : tracks_) {
      if ((sweep_instant && track.held && track.expiry <= step.at) || step.action == ServerAction::close) touched.insert(key);
    }
  }
  for (const auto& key : touched) {
    if (!key.empty()) update_key(key, step, server);
  }
}

void TimelineRecorder::update_key(const std::string& key, const ServerStep& step,
                                  const SimpleServerNode& server) {
  Track& track = tracks_[key];
  const auto view = server.engine().view(key);
  const auto answered = [&](ResponseKind kind, ConnectionId connection, const std::string& owner) {
    for (std::size_t i = step.first; i < step.out.size(); ++i) {
      const auto& o = step.out[i];
      if (o.response.kind == kind && o.connection == connection && o.response.owner == owner && o.response.key == key) return true;
    }
    return false;
  };
  const bool changed = track.held && (!view || view->token != track.token);
  if (changed) {
    const bool released = step.action == ServerAction::release &&
                          step.line.substr(step.line.rfind(' ') + 1) == std::to_string(track.token.value);
    bars_.push_back({key, true, track.start, step.at, track.owner, track.token, released ? "released" : "expired", track.expiry});
    track.held = false;
    if (!view && step.action == ServerAction::tick) marks_.push_back({key, step.at, "sweep"});
  }
  if (view && !track.held) {
    std::string owner;
    for (std::size_t i = step.first; i < step.out.size(); ++i) {
      if (step.out[i].response.kind == ResponseKind::granted && step.out[i].response.token == view->token) owner = step.out[i].response.owner;
    }
    const char* kind = !changed ? "grant"
                       : step.action == ServerAction::release ? "handoff"
                       : step.action == ServerAction::tick    ? "sweep-handoff"
                                                              : "takeover";
    marks_.push_back({key, step.at, kind});
    if (step.action == ServerAction::tick) marks_.push_back({key, step.at, "sweep"});
    track = Track{true, owner, view->token, step.at, view->expiry, std::move(track.waiting)};
  }
  if (view) track.expiry = view->expiry;
  // Waiters: who left the queue, and how; who joined it.
  std::vector<Waiting> still;
  for (const auto& w : track.waiting) {
    const bool present = view && std::any_of(view->queue.begin(), view->queue.end(), [&](const KeyView::Waiter& q) {
      return q.connection == w.connection && q.owner == w.owner && q.deadline == w.deadline;
    });
    if (present) {
      still.push_back(w);
      continue;
    }
    std::string ended = "dropped";
    if (answered(ResponseKind::timed_out, w.connection, w.owner)) {
      ended = "timeout";
      marks_.push_back({key, step.at, "timeout"});
    } else if (answered(ResponseKind::granted, w.connection, w.owner)) {
      ended = "served";
    }
    bars_.push_back({key, false, w.start, step.at, w.owner, {}, ended, w.deadline});
  }
  if (view) {
    for (const auto& q : view->queue) {
      const bool known = std::any_of(still.begin(), still.end(), [&](const Waiting& w) {
        return q.connection == w.connection && q.owner == w.owner && q.deadline == w.deadline;
      });
      if (!known) still.push_back({q.connection, q.owner, step.at, q.deadline});
    }
  }
  track.waiting = std::move(still);
  if (!view && track.waiting.empty()) tracks_.erase(key);
}

void TimelineRecorder::finish(TimeMs at) {
  for (auto& [key, track] : tracks_) {
    if (track.held) bars_.push_back({key, true, track.start, at, track.owner, track.token, "end", track.expiry});
    for (const auto& w : track.waiting) bars_.push_back({key, false, w.start, at, w.owner, {}, "end", w.deadline});
  }
  tracks_.clear();
}

}  // namespace lockstep::sim
