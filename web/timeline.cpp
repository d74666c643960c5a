#include "web/timeline.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace lockstep::web {

namespace {

bool answered(const Outputs& out, ResponseKind kind, ConnectionId connection, const std::string& owner,
              const std::string& key) {
  return std::any_of(out.begin(), out.end(), [&](const Outbound& o) {
    return o.response.kind == kind && o.connection == connection && o.response.owner == owner &&
           o.response.key == key;
  });
}

}  // namespace

void SessionTimeline::observe(Cause cause, TimeMs at, const Model& model, const Outputs& out,
                              std::optional<Token> release_token) {
  // Sessions are small: every key is compared, drawn or not.
  std::set<std::string> keys;
  for (const auto& [key, track] : tracks_) keys.insert(key);
  for (const auto& [key, state] : model.keys()) keys.insert(key);
  for (const auto& key : keys) {
    const auto found = model.keys().find(key);
    update_key(key, found == model.keys().end() ? nullptr : &found->second, cause, at, out, release_token);
  }
}

void SessionTimeline::update_key(const std::string& key, const Model::Key* state, Cause cause, TimeMs at,
                                 const Outputs& out, std::optional<Token> release_token) {
  Track& track = tracks_[key];
  const bool holder_left = track.held && (state == nullptr || state->token != track.token);
  if (holder_left) {
    const bool released = cause == Cause::release && release_token == track.token;
    bars_.push_back({key, true, track.start, at, track.owner, track.token, released ? "released" : "expired",
                     track.expiry});
    track.held = false;
    if (state == nullptr && cause == Cause::tick) marks_.push_back({key, at, "sweep"});
  }
  if (state != nullptr && !track.held) {
    const char* kind = !holder_left                ? "grant"
                       : cause == Cause::release   ? "handoff"
                       : cause == Cause::tick      ? "sweep-handoff"
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
    const bool present = state != nullptr && std::any_of(state->queue.begin(), state->queue.end(),
                                                         [&](const Model::Waiter& waiter) {
                                                           return waiter.queued_order == waiting.queued_order;
                                                         });
    if (present) {
      still.push_back(waiting);
      continue;
    }
    std::string ended = "dropped";
    if (answered(out, ResponseKind::timed_out, waiting.connection, waiting.owner, key)) {
      ended = "timeout";
      marks_.push_back({key, at, "timeout"});
    } else if (answered(out, ResponseKind::granted, waiting.connection, waiting.owner, key)) {
      ended = "served";
    }
    bars_.push_back({key, false, waiting.start, at, waiting.owner, {}, ended, waiting.deadline});
  }
  if (state != nullptr) {
    for (const auto& waiter : state->queue) {
      const bool known = std::any_of(still.begin(), still.end(), [&](const Waiting& waiting) {
        return waiting.queued_order == waiter.queued_order;
      });
      if (!known) still.push_back({waiter.queued_order, waiter.connection, waiter.owner, at, waiter.deadline});
    }
  }
  track.waiting = std::move(still);
  if (state == nullptr && track.waiting.empty()) tracks_.erase(key);
}

std::string SessionTimeline::svg(TimeMs now, const Limits& limits, InjectedBug bug) const {
  auto bars = bars_;
  for (const auto& [key, track] : tracks_) {
    if (track.held) bars.push_back({key, true, track.start, now, track.owner, track.token, "end", track.expiry});
    for (const auto& waiting : track.waiting) {
      bars.push_back({key, false, waiting.start, now, waiting.owner, {}, "end", waiting.deadline});
    }
  }
  // A fresh session still gets an axis a reader can make sense of.
  const TimeMs end{std::max<std::int64_t>(now.value, 100)};
  return sim::render_key_timeline(bars, marks_, limits.sweep_ms, end, 12, [&](std::size_t drawn, std::size_t seen) {
    return fmt::format("lockstep playground, simple mode's model: {} of {} keys, sweep every {} ms{}", drawn, seen,
                       limits.sweep_ms.value,
                       bug == InjectedBug::none ? std::string() : fmt::format(" (engine bug: {})", bug_name(bug)));
  });
}

}  // namespace lockstep::web
