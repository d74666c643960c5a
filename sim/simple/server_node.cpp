#include "sim/simple/server_node.hpp"

#include <fmt/format.h>

namespace lockstep::sim {

namespace {

constexpr const char* token_mark_name = "token_mark";

std::string render(const Outputs& out, std::size_t first) {
  std::string text = "[";
  for (std::size_t i = first; i < out.size(); ++i) {
    if (i > first) text += ", ";
    text += fmt::format("c{}: {}", out[i].connection.value, format_response(out[i].response));
  }
  return text + "]";
}

// The key a response or request is about, for focusing the shrinker.
std::string key_of(const Outputs& out, std::size_t first) {
  return first < out.size() ? out[first].response.key : std::string();
}

}  // namespace

SimpleServerNode::SimpleServerNode(Config config, DurableStorage& storage, ViolationLog& violations)
    : config_(config), storage_(storage), violations_(violations) {}

void SimpleServerNode::start(TimeMs now) {
  LOCKSTEP_ASSERT(!up());
  ++incarnation_;
  const Token first{storage_.read(token_mark_name) + 1};
  const bool forget = config_.fault == ServerFault::restart_forgets_tokens;
  engine_ = std::make_unique<Engine>(
      Engine::Config{config_.limits, forget ? Token{1} : first, config_.token_block, config_.bug});
  // The engine's clock starts where the world's is: a restarted server's
  // sweeps stay at k * sweep_ms of the one clock.
  Outputs none;
  engine_->advance(now, none);
  if (config_.compare_with_model) {
    model_ = std::make_unique<Model>(config_.limits, first, InjectedBug::none);
    model_->advance(now, none);
    model_deadlines_ = {};
  }
  if (config_.check_protocol) {
    protocol_ = std::make_unique<ClientChecker>(config_.limits);
    protocol_seen_ = 0;
  }
  LOCKSTEP_ASSERT(none.empty());
}

void SimpleServerNode::crash() {
  LOCKSTEP_ASSERT(up());
  add_counters(earlier_, engine_->counters(), engine_counters);
  engine_.reset();
  model_.reset();
  protocol_.reset();
  std::fill(open_.begin(), open_.end(), 0);
}

void SimpleServerNode::accept(ConnectionId connection) {
  if (open_.size() <= connection.value) open_.resize(connection.value + 1, 0);
  open_[connection.value] = 1;
}

bool SimpleServerNode::is_open(ConnectionId connection) const {
  return connection.value < open_.size() && open_[connection.value] != 0;
}

std::optional<TimeMs> SimpleServerNode::next_due() const {
  if (!up()) return std::nullopt;
  auto due = engine_->next_due();
  // The model's wake-ups too: an engine that forgets a deadline must still
  // be looked at when the model says something is due.
  if (model_) {
    const auto consider = [&due](TimeMs instant) {
      if (!due || instant < *due) due = instant;
    };
    if (!model_deadlines_.empty()) consider(model_deadlines_.top());
    if (!model_->keys().empty()) {
      const auto period = config_.limits.sweep_ms.value;
      consider(TimeMs{(model_->now().value / period + 1) * period});
    }
  }
  return due;
}

void SimpleServerNode::tick(TimeMs now, Outputs& out) {
  LOCKSTEP_ASSERT(up());  // the world ticks only a running server
  const std::size_t first = out.size();
  engine_->advance(now, out);
  Outputs model_out;
  if (model_) model_->advance(now, model_out);
  if (protocol_) {
    for (std::size_t i = first; i < out.size(); ++i) protocol_->on_response(now, out[i]);
    protocol_->on_time(now);
  }
  judge_step(now, [] { return std::string("time advancing"); }, out, first, model_out);
}

void SimpleServerNode::line(ConnectionId connection, std::string_view text, TimeMs now, Outputs& out) {
  LOCKSTEP_ASSERT(is_open(connection));  // and so the server is up: a crash closes every connection
  LOCKSTEP_ASSERT(up());
  const std::size_t first = out.size();
  std::optional<Request> request;
  if (protocol_ || model_) {
    auto parsed = parse_request(text, config_.limits);
    if (auto* valid = std::get_if<Request>(&parsed)) request = *valid;
  }
  if (protocol_ && request) protocol_->on_request(now, connection, *request);
  const auto outcome = engine_->on_line(connection, text, now, out);
  Outputs model_out;
  if (model_) {
    model_->on_line(connection, text, now, model_out);
    // A queued acquire is the only request that is not answered at once.
    const auto* acquire = request ? std::get_if<AcquireRequest>(&*request) : nullptr;
    if (acquire && acquire->wait_ms.value > 0 && model_out.empty()) {
      model_deadlines_.push(now + acquire->wait_ms);
    }
  }
  if (protocol_) {
    for (std::size_t i = first; i < out.size(); ++i) protocol_->on_response(now, out[i]);
    if (request) protocol_->end_request(now);
    protocol_->on_time(now);
  }
  judge_step(now, [&] { return fmt::format("'{}' on c{}", text, connection.value); }, out, first,
             model_out);
  // The simulated clients only send valid lines, never overlong ones.
  LOCKSTEP_ASSERT(outcome == LineOutcome::keep_open);
}

void SimpleServerNode::close(ConnectionId connection, TimeMs now, Outputs& out) {
  if (!is_open(connection)) return;  // already closed by a restart
  LOCKSTEP_ASSERT(up());
  const std::size_t first = out.size();
  engine_->on_close(connection, now, out);
  Outputs model_out;
  if (model_) model_->on_close(connection, now, model_out);
  open_[connection.value] = 0;
  if (protocol_) {
    for (std::size_t i = first; i < out.size(); ++i) protocol_->on_response(now, out[i]);
    protocol_->on_close(now, connection);
    protocol_->on_time(now);
  }
  judge_step(now, [&] { return fmt::format("close of c{}", connection.value); }, out, first, model_out);
}

void SimpleServerNode::judge_step(TimeMs now, const std::function<std::string()>& input, const Outputs& out,
                                  std::size_t first, const Outputs& model_out) {
  ++steps_;
  if (model_) {
    while (!model_deadlines_.empty() && model_deadlines_.top() <= now) model_deadlines_.pop();
    bool same = out.size() - first == model_out.size();
    for (std::size_t i = 0; same && i < model_out.size(); ++i) same = out[first + i] == model_out[i];
    if (!same) {
      violations_.add(now, "model",
                      fmt::format("after {}: the engine sent {}, the model {}", input(),
                                  render(out, first), render(model_out, 0)),
                      !model_out.empty() ? model_out.front().response.key : key_of(out, first));
    }
  }
  for (std::size_t i = first; i < out.size(); ++i) {
    if (!is_open(out[i].connection)) {
      violations_.add(now, "closed",
                      fmt::format("after {}: '{}' addressed to c{}, which the server closed", input(),
                                  format_response(out[i].response), out[i].connection.value),
                      out[i].response.key);
    }
  }
  persist_before_send(now, out, first);
  collect_protocol_violations();
  if (config_.invariant_period_steps != 0 && steps_ % config_.invariant_period_steps == 0) {
    engine_->check_invariants();
  }
}

void SimpleServerNode::persist_before_send(TimeMs now, const Outputs& out, std::size_t first) {
  const std::uint64_t mark = engine_->token_mark().value;
  if (mark > storage_.read(token_mark_name)) storage_.write(token_mark_name, mark);
  const std::uint64_t persisted = storage_.read(token_mark_name);
  for (std::size_t i = first; i < out.size(); ++i) {
    const Response& r = out[i].response;
    if (r.kind == ResponseKind::granted && r.token.value > persisted) {
      violations_.add(now, "durability",
                      fmt::format("token {} sent before a mark covering it was persisted (mark {})",
                                  r.token.value, persisted),
                      r.key);
    }
  }
}

void SimpleServerNode::collect_protocol_violations() {
  if (!protocol_) return;
  const auto& found = protocol_->violations();
  for (; protocol_seen_ < found.size(); ++protocol_seen_) {
    // The checker's messages start with "at T: ".
    violations_.add(engine_->now(), "protocol", found[protocol_seen_]);
  }
}

void SimpleServerNode::check_invariants() const {
  if (up()) engine_->check_invariants();
}

EngineCounters SimpleServerNode::totals() const {
  EngineCounters sum = earlier_;
  if (up()) add_counters(sum, engine_->counters(), engine_counters);
  return sum;
}

}  // namespace lockstep::sim
