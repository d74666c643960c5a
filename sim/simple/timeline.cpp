#include "sim/simple/timeline.hpp"

#include <charconv>
#include <optional>
#include <set>
#include <string_view>

#include "sim/simple/server_node.hpp"

namespace lockstep::sim {

namespace {

// The key and token an input line names, without a full parse.
std::string line_key(std::string_view line) {
  if (line.size() < 3) return {};
  const auto end = line.find(' ', 2);
  return std::string(line.substr(2, end == std::string_view::npos ? std::string_view::npos : end - 2));
}

// The token a release line names, when its last field is one written as
// the codec writes it.
std::optional<Token> released_token(const ServerStep& step) {
  if (step.action != ServerAction::release) return std::nullopt;
  const auto text = std::string_view(step.line).substr(step.line.rfind(' ') + 1);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || std::to_string(value) != text) return std::nullopt;
  return Token{value};
}

}  // namespace

void TimelineRecorder::server_step(const ServerStep& step, const SimpleServerNode& server) {
  if (step.action == ServerAction::restart) {
    tracks_.close_all(step.at, "restart");
    tracks_.mark({{}, step.at, "restart"});
    return;
  }
  std::set<std::string> touched;
  if (step.action == ServerAction::acquire || step.action == ServerAction::release) touched.insert(line_key(step.line));
  for (std::size_t i = step.first; i < step.out.size(); ++i) touched.insert(step.out[i].response.key);
  const bool sweep_instant = step.action == ServerAction::tick && step.at.value % params_.limits.sweep_ms.value == 0;
  if (sweep_instant || step.action == ServerAction::close) {
    // The sweep deletes silently, and a close drops waiters silently.
    for (const auto& key : tracks_.keys()) {
      if ((sweep_instant && tracks_.held_and_due(key, step.at)) || step.action == ServerAction::close) touched.insert(key);
    }
  }
  for (const auto& key : touched) {
    if (!key.empty()) update_key(key, step, server);
  }
}

void TimelineRecorder::update_key(const std::string& key, const ServerStep& step,
                                  const SimpleServerNode& server) {
  const auto view = server.engine().view(key);
  std::optional<KeyTracks::State> state;
  if (view) {
    state.emplace();
    state->token = view->token;
    state->expiry = view->expiry;
    // The view has no holder's name: the grant this step sent carries it.
    for (std::size_t i = step.first; i < step.out.size(); ++i) {
      if (step.out[i].response.kind == ResponseKind::granted && step.out[i].response.token == view->token) {
        state->holder = step.out[i].response.owner;
      }
    }
    for (const auto& q : view->queue) state->queue.push_back({0, q.connection, q.owner, q.deadline});
  }
  const auto cause = step.action == ServerAction::acquire ? KeyTracks::Cause::acquire
                     : step.action == ServerAction::release ? KeyTracks::Cause::release
                     : step.action == ServerAction::close   ? KeyTracks::Cause::close
                                                            : KeyTracks::Cause::tick;
  tracks_.update(key, state ? &*state : nullptr, cause, step.at, released_token(step), [&](ResponseKind kind, ConnectionId connection, const std::string& owner) {
    for (std::size_t i = step.first; i < step.out.size(); ++i) {
      const auto& o = step.out[i];
      if (o.response.kind == kind && o.connection == connection && o.response.owner == owner && o.response.key == key) return true;
    }
    return false;
  });
}

void TimelineRecorder::finish(TimeMs at) { tracks_.close_all(at, "end"); }

}  // namespace lockstep::sim
