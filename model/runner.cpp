#include "model/runner.hpp"

#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "impl/cluster/one_node.hpp"
#include "model/cluster_model.hpp"
#include "model/judge.hpp"
#include "model/model.hpp"

namespace lockstep {

namespace {

class EngineService final : public LockService {
 public:
  EngineService(const Limits& limits, InjectedBug bug) : engine_({limits, Token{1}, 1024, bug}) {}
  LineOutcome on_line(ConnectionId c, std::string_view line, TimeMs now, Outputs& out) override {
    const auto outcome = engine_.on_line(c, line, now, out);
    engine_.check_invariants();
    return outcome;
  }
  void on_close(ConnectionId c, TimeMs now, Outputs& out) override {
    engine_.on_close(c, now, out);
    engine_.check_invariants();
  }
  void advance(TimeMs now, Outputs& out) override {
    engine_.advance(now, out);
    engine_.check_invariants();
  }
  std::optional<TimeMs> next_due() const override { return engine_.next_due(); }

 private:
  Engine engine_;
};

class ClusterEngineService final : public LockService {
 public:
  explicit ClusterEngineService(const Limits& limits) : cluster_(limits) {}
  LineOutcome on_line(ConnectionId c, std::string_view line, TimeMs now, Outputs& out) override {
    const auto outcome = cluster_.on_line(c, line, now, out);
    cluster_.check_invariants();
    return outcome;
  }
  void on_close(ConnectionId c, TimeMs now, Outputs& out) override {
    cluster_.on_close(c, now, out);
    cluster_.check_invariants();
  }
  void advance(TimeMs now, Outputs& out) override {
    cluster_.advance(now, out);
    cluster_.check_invariants();
  }
  std::optional<TimeMs> next_due() const override { return cluster_.next_due(); }

 private:
  cluster::OneNodeCluster cluster_;
};

// The reference model as a one-node cluster: each request is committed at
// its instant, after what the leader would propose then. Its deadlines are
// found by scanning the table (no heap to share a bug with the engine side):
// at each instant the waiters whose deadline has come are timed out, in the
// order they were queued, then the holders whose lease has ended are
// expired, in token order.
class ClusterModelService final : public LockService {
 public:
  explicit ClusterModelService(const Limits& limits) : model_(limits) {}
  LineOutcome on_line(ConnectionId c, std::string_view line, TimeMs now, Outputs& out) override {
    advance(now, out);
    auto parsed = parse_session_request(line, model_.limits());
    if (auto* bad = std::get_if<Malformed>(&parsed)) {
      out.push_back({c, Response::error(bad->reason)});
      return line.size() > model_.limits().max_line_bytes ? LineOutcome::close_connection : LineOutcome::keep_open;
    }
    const auto& request = std::get<SessionRequest>(parsed);
    const auto session = request.session
                             ? cluster::Session{std::string(request.session->client), request.session->sequence}
                             : cluster::Session{};
    if (const auto* a = std::get_if<AcquireRequest>(&request.request)) {
      commit(cluster::Acquire{session, c, std::string(a->key), std::string(a->owner), a->lease_ms, a->wait_ms, now},
             out);
    } else {
      const auto& r = std::get<ReleaseRequest>(request.request);
      commit(cluster::Release{session, c, std::string(r.key), r.token, now}, out);
    }
    return LineOutcome::keep_open;
  }
  void on_close(ConnectionId c, TimeMs now, Outputs& out) override {
    advance(now, out);
    commit(cluster::Close{c, now}, out);
  }
  void advance(TimeMs now, Outputs& out) override {
    for (auto due = next_due(); due && *due <= now; due = next_due()) fire(*due, out);
  }
  std::optional<TimeMs> next_due() const override {
    std::optional<TimeMs> next;
    const auto consider = [&](TimeMs at) { next = next ? std::min(*next, at) : at; };
    for (const auto& [key, state] : model_.keys()) {
      consider(state.expiry);
      for (const auto& waiter : state.queue) consider(waiter.deadline);
    }
    return next;
  }

 private:
  void commit(const cluster::Command& command, Outputs& out) {
    for (auto& o : model_.apply(command)) out.push_back(std::move(o));
  }
  void fire(TimeMs instant, Outputs& out) {
    std::map<std::uint64_t, std::string> timeouts;  // waiter id -> key: queueing order
    for (const auto& [key, state] : model_.keys()) {
      for (const auto& waiter : state.queue) {
        if (waiter.deadline <= instant) timeouts.emplace(waiter.id, key);
      }
    }
    for (const auto& [id, key] : timeouts) commit(cluster::Timeout{key, cluster::WaiterId{id}, instant}, out);
    std::map<std::uint64_t, std::string> expiries;  // token -> key: token order
    for (const auto& [key, state] : model_.keys()) {
      if (state.expiry <= instant) expiries.emplace(state.token.value, key);
    }
    for (const auto& [token, key] : expiries) commit(cluster::Expire{key, Token{token}, instant}, out);
  }

  model::ClusterModel model_;
};

// Connection names of the vector, mapped to fresh ids; a name reused after
// `close` is a new connection.
class Connections {
 public:
  ConnectionId open(const std::string& name) {
    auto found = open_.find(name);
    if (found != open_.end()) return found->second;
    const ConnectionId id{++last_id_};
    open_.emplace(name, id);
    names_.emplace(id, name);
    return id;
  }
  void close(const std::string& name) { open_.erase(name); }
  bool is_open(ConnectionId id) const {
    const auto name = names_.find(id);
    return name != names_.end() && open_.contains(name->second) && open_.at(name->second) == id;
  }
  std::string name_of(ConnectionId id) const {
    const auto name = names_.find(id);
    return name == names_.end() ? fmt::format("<unknown connection {}>", id.value) : name->second;
  }

 private:
  std::map<std::string, ConnectionId> open_;
  std::map<ConnectionId, std::string> names_;
  std::uint64_t last_id_ = 0;
};

class InProcessRun {
 public:
  InProcessRun(const Vector& vector, LockService& service)
      : vector_(vector), service_(service), judge_(vector) {}

  VectorVerdict run(std::optional<TimeMs> until = std::nullopt) {
    if (judge_.problem()) return fail(*judge_.problem());
    const auto instants = named_instants(vector_);
    std::optional<TimeMs> previous;
    for (const TimeMs instant : instants) {
      if (until && instant > *until) break;
      if (auto error = run_up_to(instant, previous)) return fail(*error);
      if (auto error = run_instant(instant)) return fail(*error);
      previous = instant;
    }
    return VectorVerdict{};
  }

  const VectorJudge& judge() const { return judge_; }
  std::string connection_name(ConnectionId id) const { return connections_.name_of(id); }

 private:
  static VectorVerdict fail(const VectorError& error) {
    return VectorVerdict{VectorVerdict::Status::fail, error.line, error.message};
  }

  int line_at_or_before(TimeMs instant) const { return lockstep::line_at_or_before(vector_, instant); }

  // Fires what is due between the previous named instant and this one: the
  // vector names no instant there, so anything sent is unexpected.
  std::optional<VectorError> run_up_to(TimeMs instant, std::optional<TimeMs> previous) {
    if (instant.value == 0) return std::nullopt;
    const TimeMs before{instant.value - 1};
    if (previous && *previous >= before) return std::nullopt;
    for (auto due = service_.next_due(); due && *due <= before; due = service_.next_due()) {
      Outputs out;
      service_.advance(*due, out);
      if (!out.empty()) return judge_.unexpected(*due, observed(out), line_at_or_before(*due));
    }
    Outputs out;
    service_.advance(before, out);
    if (!out.empty()) return judge_.unexpected(before, observed(out), line_at_or_before(before));
    return std::nullopt;
  }

  std::optional<VectorError> run_instant(TimeMs instant) {
    checked_ = 0;
    Outputs out;
    service_.advance(instant, out);
    for (const auto& step : vector_.steps) {
      if (step.time != instant) continue;
      if (step.kind == VectorStep::Kind::at) {
        auto line = judge_.request_line(step);
        if (auto* error = std::get_if<VectorError>(&line)) return *error;
        const auto connection = connections_.open(step.connection);
        if (auto error = check_addressed(out, step.line)) return error;
        const auto outcome = service_.on_line(connection, std::get<std::string>(line), instant, out);
        // The answer goes out before the connection closes (an overlong line).
        if (auto error = check_addressed(out, step.line)) return error;
        if (outcome == LineOutcome::close_connection) {
          service_.on_close(connection, instant, out);
          connections_.close(step.connection);
        }
      } else if (step.kind == VectorStep::Kind::close) {
        const auto connection = connections_.open(step.connection);
        if (auto error = check_addressed(out, step.line)) return error;
        service_.on_close(connection, instant, out);
        connections_.close(step.connection);
      }
    }
    // The instant ends as a live run's does, with one more move to it (a
    // barrier); for a correct service it fires nothing.
    service_.advance(instant, out);
    if (auto error = check_addressed(out, line_at_or_before(instant))) return error;
    return judge_.judge_instant(instant, observed(out));
  }

  // Responses must go to connections that are open when they are sent.
  std::optional<VectorError> check_addressed(const Outputs& out, int line) {
    for (; checked_ < out.size(); ++checked_) {
      if (!connections_.is_open(out[checked_].connection)) {
        return VectorError{line, fmt::format("response '{}' sent on {}, which is not open",
                                             format_response(out[checked_].response),
                                             connections_.name_of(out[checked_].connection))};
      }
    }
    return std::nullopt;
  }

  std::vector<ObservedResponse> observed(const Outputs& out) const {
    std::vector<ObservedResponse> result;
    for (const auto& o : out) {
      result.push_back({connections_.name_of(o.connection), format_response(o.response)});
    }
    return result;
  }

  const Vector& vector_;
  LockService& service_;
  VectorJudge judge_;
  Connections connections_;
  std::size_t checked_ = 0;
};

}  // namespace

std::unique_ptr<LockService> make_service(ServiceKind kind, const Limits& limits, InjectedBug bug) {
  if (kind == ServiceKind::engine) return std::make_unique<EngineService>(limits, bug);
  return std::make_unique<ModelService>(limits, bug);
}

std::unique_ptr<LockService> make_cluster_service(ServiceKind kind, const Limits& limits) {
  if (kind == ServiceKind::engine) return std::make_unique<ClusterEngineService>(limits);
  return std::make_unique<ClusterModelService>(limits);
}

VectorVerdict run_vector(const Vector& vector, ServiceKind kind, InjectedBug bug) {
  const auto service = vector.mode == VectorMode::cluster ? make_cluster_service(kind, vector.limits)
                                                          : make_service(kind, vector.limits, bug);
  // The services check their invariants after every step; a broken one (an
  // injected bug can break one before any answer differs) fails the vector,
  // it does not end the process that replays it.
  try {
    return InProcessRun(vector, *service).run();
  } catch (const InvariantViolation& violation) {
    return VectorVerdict{VectorVerdict::Status::fail, 0,
                         fmt::format("the {}'s invariant failed: {}", kind == ServiceKind::engine ? "engine" : "model",
                                     violation.what())};
  }
}

VectorVerdict run_vector_file(const std::string& path, ServiceKind kind, InjectedBug bug) {
  auto parsed = read_vector_file(path);
  if (auto* error = std::get_if<VectorError>(&parsed)) {
    return VectorVerdict{VectorVerdict::Status::fail, error->line, error->message};
  }
  return run_vector(std::get<Vector>(parsed), kind, bug);
}

std::string model_view_at(const Vector& vector, TimeMs at) {
  ModelService service(vector.limits, InjectedBug::none);
  InProcessRun run(vector, service);
  run.run(at);
  std::map<std::uint64_t, std::string> names;
  for (const auto& [name, token] : run.judge().bindings()) names[token.value] = "$" + name;
  const auto token_text = [&](Token token) {
    const auto found = names.find(token.value);
    return found == names.end() ? fmt::format("#{}", token.value) : found->second;
  };
  const auto& model = service.model();
  std::string text = fmt::format("  the model at {}:", at.value);
  if (model.keys().empty()) return text + " no key is registered";
  for (const auto& [key, state] : model.keys()) {
    text += fmt::format("\n    {}: held by {} with token {} until {}{}", key, state.holder, token_text(state.token),
                        state.expiry.value, at >= state.expiry ? " (expired, not swept)" : "");
    for (const auto& waiter : state.queue) {
      text += fmt::format("\n      queued: {} on {}, lease {} ms, deadline {}", waiter.owner,
                          run.connection_name(waiter.connection), waiter.lease_ms.value, waiter.deadline.value);
    }
  }
  return text;
}

std::string verdict_line(const std::string& path, const VectorVerdict& verdict) {
  switch (verdict.status) {
    case VectorVerdict::Status::ok:
      return fmt::format("ok {}", path);
    case VectorVerdict::Status::skip:
      return fmt::format("skip {}: {}", path, verdict.message);
    case VectorVerdict::Status::fail:
      break;
  }
  return fmt::format("FAIL {}:{}: {}", path, verdict.line, verdict.message);
}

}  // namespace lockstep
