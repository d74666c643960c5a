#include "web/timeline.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace lockstep::web {

void SessionTimeline::observe(Cause cause, TimeMs at, const Model& model, const Outputs& out,
                              std::optional<Token> release_token) {
  // Sessions are small: every key is compared, drawn or not.
  std::set<std::string> keys;
  for (const auto& key : tracks_.keys()) keys.insert(key);
  for (const auto& [key, state] : model.keys()) keys.insert(key);
  for (const auto& key : keys) {
    const auto found = model.keys().find(key);
    std::optional<sim::KeyTracks::State> state;
    if (found != model.keys().end()) {
      const auto& k = found->second;
      state.emplace();
      state->holder = k.holder;
      state->token = k.token;
      state->expiry = k.expiry;
      for (const auto& w : k.queue) state->queue.push_back({w.queued_order, w.connection, w.owner, w.deadline});
    }
    const auto answered = [&](ResponseKind kind, ConnectionId connection, const std::string& owner) {
      return std::any_of(out.begin(), out.end(), [&](const Outbound& o) {
        return o.response.kind == kind && o.connection == connection && o.response.owner == owner &&
               o.response.key == key;
      });
    };
    tracks_.update(key, state ? &*state : nullptr, cause, at, release_token,
                   answered);
  }
}

std::string SessionTimeline::svg(TimeMs now, const Limits& limits, InjectedBug bug) const {
  auto bars = tracks_.bars();
  const auto open = tracks_.open_bars(now, "end");
  bars.insert(bars.end(), open.begin(), open.end());
  // A fresh session still gets an axis a reader can make sense of.
  const TimeMs end{std::max<std::int64_t>(now.value, 100)};
  return sim::render_key_timeline(bars, tracks_.marks(), limits.sweep_ms, end, 12, [&](std::size_t drawn, std::size_t seen) {
    return fmt::format("lockstep playground, simple mode's model: {} of {} keys, sweep every {} ms{}", drawn, seen,
                       limits.sweep_ms.value,
                       bug == InjectedBug::none ? std::string() : fmt::format(" (engine bug: {})", bug_name(bug)));
  });
}

}  // namespace lockstep::web
