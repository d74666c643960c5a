#include "sim/simple/key_tracks.hpp"

#include <algorithm>

namespace lockstep::sim {

namespace {

bool same_waiter(const KeyTracks::Waiter& a, const KeyTracks::Waiter& b) {
  return a.identity == b.identity && a.connection == b.connection && a.owner == b.owner && a.deadline == b.deadline;
}

}  // namespace

void KeyTracks::update(const std::string& key, const State* state, Cause cause, TimeMs at,
                       std::optional<Token> released, const Answered& answered) {
  Track& track = tracks_[key];
  const bool holder_left = track.held && (state == nullptr || state->token != track.token);
  if (holder_left) {
    const bool by_release = cause == Cause::release && released == track.token;
    bars_.push_back({key, true, track.start, at, track.owner, track.token, by_release ? "released" : "expired",
                     track.expiry});
    track.held = false;
    if (state == nullptr && cause == Cause::tick) marks_.push_back({key, at, "sweep"});
  }
  if (state != nullptr && !track.held) {
    const char* kind = !holder_left              ? "grant"
                       : cause == Cause::release ? "handoff"
                       : cause == Cause::tick    ? "sweep-handoff"
                                                 : "takeover";
    marks_.push_back({key, at, kind});
    if (cause == Cause::tick) marks_.push_back({key, at, "sweep"});
    track.held = true;
    track.owner = state->holder;
    track.token = state->token;
    track.start = at;
  }
  if (state != nullptr) track.expiry = state->expiry;

  // Waiters: who left the queue, and how; who joined it.
  std::vector<Waiting> still;
  for (const auto& waiting : track.waiting) {
    const bool present = state != nullptr && std::any_of(state->queue.begin(), state->queue.end(), [&](const Waiter& w) {
                           return same_waiter(w, waiting.waiter);
                         });
    if (present) {
      still.push_back(waiting);
      continue;
    }
    const auto& w = waiting.waiter;
    std::string ended = "dropped";
    if (answered(ResponseKind::timed_out, w.connection, w.owner)) {
      ended = "timeout";
      marks_.push_back({key, at, "timeout"});
    } else if (answered(ResponseKind::granted, w.connection, w.owner)) {
      ended = "served";
    }
    bars_.push_back({key, false, waiting.start, at, w.owner, {}, ended, w.deadline});
  }
  if (state != nullptr) {
    for (const auto& w : state->queue) {
      const bool known = std::any_of(still.begin(), still.end(), [&](const Waiting& waiting) {
        return same_waiter(w, waiting.waiter);
      });
      if (!known) still.push_back({w, at});
    }
  }
  track.waiting = std::move(still);
  if (state == nullptr && track.waiting.empty()) tracks_.erase(key);
}

std::vector<TimelineBar> KeyTracks::open_bars(TimeMs at, const char* ended) const {
  std::vector<TimelineBar> bars;
  for (const auto& [key, track] : tracks_) {
    if (track.held) bars.push_back({key, true, track.start, at, track.owner, track.token, ended, track.expiry});
    for (const auto& waiting : track.waiting) {
      bars.push_back({key, false, waiting.start, at, waiting.waiter.owner, {}, ended, waiting.waiter.deadline});
    }
  }
  return bars;
}

void KeyTracks::close_all(TimeMs at, const char* ended) {
  const auto open = open_bars(at, ended);
  bars_.insert(bars_.end(), open.begin(), open.end());
  tracks_.clear();
}

bool KeyTracks::held_and_due(const std::string& key, TimeMs at) const {
  const auto found = tracks_.find(key);
  return found != tracks_.end() && found->second.held && found->second.expiry <= at;
}

std::vector<std::string> KeyTracks::keys() const {
  std::vector<std::string> keys;
  for (const auto& [key, track] : tracks_) keys.push_back(key);
  return keys;
}

}  // namespace lockstep::sim
