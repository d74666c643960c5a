#include "web/session.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "impl/decimal.hpp"

namespace lockstep::web {

namespace {

std::size_t source_index(Source source) { return static_cast<std::size_t>(source); }

// A response line as two services are compared on it: any `E` is alike.
std::string comparable(const Entry& entry) {
  return entry.connection + '\n' + (entry.response.kind == ResponseKind::error ? std::string("E") : entry.line);
}

// `R <key> <token>` with a canonical token: the token, else nothing.
std::optional<Token> released_token(std::string_view line) {
  if (!line.starts_with("R ")) return std::nullopt;
  const auto second_space = line.find(' ', 2);
  if (second_space == std::string_view::npos || line.find(' ', second_space + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  const auto value = parse_decimal(line.substr(second_space + 1));
  if (!value || *value == 0) return std::nullopt;
  return Token{*value};
}

// A request line that a vector's `at` line could not carry unchanged (the
// vector format trims a line and starts a comment at ` #`), so that every
// session can be exported.
std::optional<std::string> unsayable_in_a_vector(std::string_view line) {
  if (line.empty()) return std::string("an empty line cannot be written in a vector");
  const char first = line.front(), last = line.back();
  if (first == ' ' || first == '\t' || first == '\r' || last == ' ' || last == '\t' || last == '\r') {
    return std::string("white space at either end of a line cannot be written in a vector");
  }
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return std::string("a # at the start of a word would start a comment in a vector");
    }
  }
  return std::nullopt;
}

std::string limit_value(const Limits& limits, std::string_view name) {
  if (name == "max_keys") return std::to_string(limits.max_keys);
  if (name == "max_waiters_per_key") return std::to_string(limits.max_waiters_per_key);
  if (name == "max_waiters") return std::to_string(limits.max_waiters);
  if (name == "sweep_ms") return std::to_string(limits.sweep_ms.value);
  if (name == "max_lease_ms") return std::to_string(limits.max_lease_ms.value);
  if (name == "max_wait_ms") return std::to_string(limits.max_wait_ms.value);
  return std::to_string(limits.max_line_bytes);
}

// A vector's config line: the mode and the limits that are not the
// defaults; empty when there is nothing to say.
std::string config_line(VectorMode mode, const Limits& limits) {
  std::string config;
  if (mode == VectorMode::cluster) config += " mode=cluster";
  const Limits defaults;
  for (const auto name : limit_names) {
    if (limit_value(limits, name) != limit_value(defaults, name)) {
      config += fmt::format(" {}={}", name, limit_value(limits, name));
    }
  }
  return config.empty() ? std::string() : "config" + config + "\n";
}

// A token is named where the reference granted it; a request may use the
// name from the next instant on (a vector binds names when an instant is
// judged), and the literal before.
class TokenNames {
 public:
  TokenNames(const std::vector<Entry>& entries, Source reference) {
    for (const auto& entry : entries) {
      if (entry.kind == Entry::Kind::response && entry.source == reference &&
          entry.response.kind == ResponseKind::granted && !granted_at_.contains(entry.response.token.value)) {
        granted_at_.emplace(entry.response.token.value, entry.at);
      }
    }
  }

  // The name or the literal of a token, in a request and in an expect line
  // at `at`.
  std::string in_request(Token token, TimeMs at) const {
    return spelled(token, [&](TimeMs granted) { return granted < at; });
  }
  std::string in_expect(Token token, TimeMs at) const {
    return spelled(token, [&](TimeMs granted) { return granted <= at; });
  }

  // Tokens granted at one instant come out in the order issued (one
  // sweep's hand-offs among them): an `order` line says so.
  std::string order_lines() const {
    std::map<TimeMs, std::vector<std::uint64_t>> by_instant;
    for (const auto& [token, at] : granted_at_) by_instant[at].push_back(token);
    std::string text;
    for (const auto& [at, tokens] : by_instant) {
      if (tokens.size() < 2) continue;
      text += "order";
      for (const auto token : tokens) text += fmt::format(" $t{}", token);
      text += fmt::format("  # granted at {}\n", at.value);
    }
    return text;
  }

 private:
  // `usable` says whether a name bound at the instant of the grant may be
  // used: in a request, only from the next instant; in an expect line, from
  // that instant (a name bound later would break the rule that tokens bound
  // at later instants are greater).
  template <typename Usable>
  std::string spelled(Token token, Usable usable) const {
    const auto found = granted_at_.find(token.value);
    if (found == granted_at_.end() || !usable(found->second)) return std::to_string(token.value);
    return fmt::format("$t{}", token.value);
  }

  std::map<std::uint64_t, TimeMs> granted_at_;
};

// An input as a vector's `at` or `close` line; nothing for a clock move.
std::string input_line(const Input& input, const TokenNames& names) {
  if (input.kind == Input::Kind::request) {
    std::string line = input.line;
    if (const auto token = released_token(line)) {
      line = line.substr(0, line.rfind(' ') + 1) + names.in_request(*token, input.at);
    }
    return fmt::format("at {} {} {}\n", input.at.value, input.connection, line);
  }
  if (input.kind == Input::Kind::close) return fmt::format("close {} {}\n", input.at.value, input.connection);
  return {};
}

// What an expect line says a response is.
std::string expected_response(const Entry& entry, const TokenNames& names) {
  const auto& r = entry.response;
  switch (r.kind) {
    case ResponseKind::granted:
      return fmt::format("A {} {} {}", names.in_expect(r.token, entry.at), r.owner, r.key);
    case ResponseKind::released:
      return fmt::format("R {} {}", names.in_expect(r.token, entry.at), r.key);
    case ResponseKind::not_held:
      return fmt::format("N {} {}", names.in_expect(r.token, entry.at), r.key);
    case ResponseKind::error:
      return std::string("E");  // the reason is each implementation's own
    case ResponseKind::timed_out:
    case ResponseKind::busy:
      break;
  }
  return entry.line;
}

}  // namespace

const char* source_name(Source source) {
  switch (source) {
    case Source::model:
      return "model";
    case Source::engine:
      return "engine";
    case Source::cluster_model:
      return "cluster-model";
    case Source::cluster:
      return "cluster";
  }
  return "?";
}

struct Session::Services {
  Services(const Limits& limits, InjectedBug bug) {
    auto model = std::make_unique<ModelService>(limits);
    model_view = model.get();
    services[source_index(Source::model)] = std::move(model);
    services[source_index(Source::engine)] = make_service(ServiceKind::engine, limits, bug);
    services[source_index(Source::cluster_model)] = make_cluster_service(ServiceKind::model, limits);
    services[source_index(Source::cluster)] = make_cluster_service(ServiceKind::engine, limits);
  }
  std::array<std::unique_ptr<LockService>, sources.size()> services;
  std::array<std::optional<std::string>, sources.size()> failures;
  const ModelService* model_view = nullptr;
};

Session::Session(Limits limits, InjectedBug bug) : limits_(limits), bug_(bug) {
  if (auto problem = validate(limits_)) throw std::invalid_argument(*problem);
  services_ = std::make_unique<Services>(limits_, bug_);
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const ConnectionState* Session::find_open(const std::string& connection) const {
  for (const auto& state : connections_) {
    if (state.name == connection && state.open) return &state;
  }
  return nullptr;
}

std::optional<std::string> Session::open(const std::string& connection) {
  if (connection.empty() || connection.size() > 32 ||
      !std::all_of(connection.begin(), connection.end(), [](char c) { return c > ' ' && c < 127 && c != '#'; })) {
    return fmt::format("'{}' is not a connection name (1 to 32 printable characters, no space or #)", connection);
  }
  if (find_open(connection) != nullptr) return std::nullopt;
  const auto open_count = std::count_if(connections_.begin(), connections_.end(), [](const auto& c) { return c.open; });
  if (static_cast<std::size_t>(open_count) >= connections_max) {
    return fmt::format("at most {} connections are open at once", connections_max);
  }
  // A closed name that opens again is a new connection, as in a vector; it
  // keeps its column.
  for (auto& state : connections_) {
    if (state.name == connection) {
      state.id = ConnectionId{++last_connection_id_};
      state.open = true;
      names_.emplace(state.id, connection);
      return std::nullopt;
    }
  }
  connections_.push_back({connection, ConnectionId{++last_connection_id_}, true});
  names_.emplace(connections_.back().id, connection);
  return std::nullopt;
}

std::string Session::fresh_connection_name() const {
  for (std::size_t n = 1;; ++n) {
    auto name = fmt::format("c{}", n);
    if (std::none_of(connections_.begin(), connections_.end(), [&](const auto& c) { return c.name == name; })) {
      return name;
    }
  }
}

std::optional<std::string> Session::send(const std::string& connection, const std::string& line) {
  if (inputs_.size() >= inputs_max) return fmt::format("a session holds at most {} inputs", inputs_max);
  if (line.size() > request_bytes_max) return fmt::format("a request here is at most {} bytes", request_bytes_max);
  if (line.find('\n') != std::string::npos) return std::string("one line at a time");
  if (auto problem = unsayable_in_a_vector(line)) return problem;
  if (auto problem = open(connection)) return problem;
  const auto* state = find_open(connection);
  apply({Input::Kind::request, now_, connection, state->id, line});
  return std::nullopt;
}

std::optional<std::string> Session::close(const std::string& connection) {
  if (inputs_.size() >= inputs_max) return fmt::format("a session holds at most {} inputs", inputs_max);
  const auto* state = find_open(connection);
  if (state == nullptr) return fmt::format("{} is not open", connection);
  apply({Input::Kind::close, now_, connection, state->id, {}});
  return std::nullopt;
}

std::optional<std::string> Session::advance_to(TimeMs at) {
  if (at < now_) return fmt::format("the clock is at {} ms and never goes back", now_.value);
  if (at > time_max) return fmt::format("the clock stops at {} ms", time_max.value);
  if (inputs_.size() >= inputs_max) return fmt::format("a session holds at most {} inputs", inputs_max);
  apply({Input::Kind::clock, at, {}, {}, {}});
  return std::nullopt;
}

std::optional<TimeMs> Session::next_due() const {
  std::optional<TimeMs> next;
  for (const auto source : sources) {
    if (failure(source)) continue;
    const auto due = services_->services[source_index(source)]->next_due();
    if (due && *due > now_ && (!next || *due < *next)) next = due;
  }
  return next;
}

void Session::set_bug(InjectedBug bug) {
  bug_ = bug;
  services_ = std::make_unique<Services>(limits_, bug_);
  timeline_ = SessionTimeline{};
  entries_.clear();
  const auto connections_before = connections_;
  for (auto& state : connections_) state.open = false;
  const auto inputs = std::move(inputs_);
  inputs_.clear();
  now_ = TimeMs{0};
  // Connection ids are kept as they were: each input carries its own.
  for (const auto& input : inputs) {
    for (auto& state : connections_) {
      if (state.name == input.connection && input.kind != Input::Kind::clock) {
        state.id = input.id;
        state.open = true;
      }
    }
    apply(input);
  }
  connections_ = connections_before;  // columns opened but never used stay open
}

void Session::apply(const Input& input) {
  const std::size_t index = inputs_.size();
  inputs_.push_back(input);
  if (input.kind == Input::Kind::request) {
    entries_.push_back({Entry::Kind::request, input.at, input.connection, input.line, Source::model, index, {}, false});
  } else if (input.kind == Input::Kind::close) {
    entries_.push_back({Entry::Kind::close, input.at, input.connection, {}, Source::model, index, {}, false});
  }
  for (const auto source : sources) feed(source, input, index);
  if (input.kind == Input::Kind::clock) now_ = input.at;
  if (input.kind == Input::Kind::close) {
    for (auto& state : connections_) {
      if (state.name == input.connection && state.id == input.id) state.open = false;
    }
  }
}

void Session::feed(Source source, const Input& input, std::size_t index) {
  auto& failure_slot = services_->failures[source_index(source)];
  if (failure_slot) return;
  LockService& service = *services_->services[source_index(source)];
  const bool observed = source == Source::model;
  const auto& model = services_->model_view->model();
  Outputs out;
  try {
    switch (input.kind) {
      case Input::Kind::request: {
        const auto outcome = service.on_line(input.id, input.line, input.at, out);
        record(source, input.at, out, index);
        if (observed) {
          const auto token = released_token(input.line);
          timeline_.observe(token ? SessionTimeline::Cause::release : SessionTimeline::Cause::acquire, input.at,
                            model, out, token);
        }
        // Only the reference decides that the connection closes (a line
        // over max_line_bytes); every service is told.
        if (source == Source::model && outcome == LineOutcome::close_connection) {
          for (auto& state : connections_) {
            if (state.name == input.connection && state.id == input.id) state.open = false;
          }
          entries_.push_back({Entry::Kind::close, input.at, input.connection, {}, Source::model, index, {}, true});
        }
        if (!find_open(input.connection) || find_open(input.connection)->id != input.id) {
          out.clear();
          service.on_close(input.id, input.at, out);
          record(source, input.at, out, index);
        }
        break;
      }
      case Input::Kind::close:
        service.on_close(input.id, input.at, out);
        record(source, input.at, out, index);
        if (observed) timeline_.observe(SessionTimeline::Cause::close, input.at, model, out);
        break;
      case Input::Kind::clock: {
        // The moves of the in-process runner, so that a service is seen
        // here as the runner sees it (a broken one too): first the end of
        // the current instant (one more move to it), then each instant due
        // before the target, one by one so that each response carries its
        // instant, then the instant before the target, then the target.
        const auto move = [&](TimeMs instant) {
          out.clear();
          service.advance(instant, out);
          record(source, instant, out, index);
          if (observed) timeline_.observe(SessionTimeline::Cause::tick, instant, model, out);
        };
        move(now_);
        if (input.at == now_) break;
        std::optional<TimeMs> last;
        int repeats = 0;
        for (auto due = service.next_due(); due && *due < input.at; due = service.next_due()) {
          const TimeMs instant = std::max(*due, now_);
          // A move to an instant may leave its work for a second move (an
          // injected bug does); a service still due there after that is
          // left to the move to the target.
          repeats = last == instant ? repeats + 1 : 0;
          if (repeats > 1) break;
          move(instant);
          last = instant;
        }
        if (TimeMs before{input.at.value - 1}; before > now_) move(before);
        move(input.at);
        break;
      }
    }
  } catch (const std::exception& error) {
    failure_slot = fmt::format("{} stopped at {} ms: {}", source_name(source), input.at.value, error.what());
  }
}

std::string Session::connection_name(ConnectionId id) const {
  const auto found = names_.find(id);
  return found == names_.end() ? fmt::format("<connection {}>", id.value) : found->second;
}

void Session::record(Source source, TimeMs at, const Outputs& out, std::size_t index) {
  for (const auto& o : out) {
    const auto name = connection_name(o.connection);
    entries_.push_back({Entry::Kind::response, at, name, format_response(o.response), source, index, o.response, false});
  }
}

const std::optional<std::string>& Session::failure(Source source) const {
  return services_->failures[source_index(source)];
}

const Model& Session::model() const { return services_->model_view->model(); }

TimeMs Session::next_sweep() const {
  const auto sweep = limits_.sweep_ms.value;
  return TimeMs{(now_.value / sweep + 1) * sweep};
}

std::vector<ObservedResponse> Session::sent_at(Source source, TimeMs at) const {
  std::vector<ObservedResponse> sent;
  for (const auto& entry : entries_) {
    if (entry.kind == Entry::Kind::response && entry.source == source && entry.at == at) {
      sent.push_back({entry.connection, entry.line});
    }
  }
  return sent;
}

std::vector<TimeMs> Session::instants_with_responses(Source source) const {
  std::vector<TimeMs> instants;
  for (const auto& entry : entries_) {
    if (entry.kind == Entry::Kind::response && entry.source == source &&
        std::find(instants.begin(), instants.end(), entry.at) == instants.end()) {
      instants.push_back(entry.at);
    }
  }
  std::sort(instants.begin(), instants.end());
  return instants;
}

std::optional<Divergence> Session::first_divergence() const {
  // Per instant, each side's responses as a multiset of comparable lines,
  // with the entries that carry them.
  using Side = std::map<TimeMs, std::multimap<std::string, std::size_t>>;
  Side model_side, engine_side;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& entry = entries_[i];
    if (entry.kind != Entry::Kind::response) continue;
    if (entry.source == Source::model) model_side[entry.at].emplace(comparable(entry), i);
    if (entry.source == Source::engine) engine_side[entry.at].emplace(comparable(entry), i);
  }
  std::vector<TimeMs> instants;
  for (const auto& [at, lines] : model_side) instants.push_back(at);
  for (const auto& [at, lines] : engine_side) instants.push_back(at);
  std::sort(instants.begin(), instants.end());
  for (const auto at : instants) {
    auto model_lines = model_side[at];
    auto engine_lines = engine_side[at];
    Divergence divergence{at, {}, {}};
    for (const auto& [line, index] : engine_lines) {
      const auto match = model_lines.find(line);
      if (match == model_lines.end()) {
        divergence.engine_only.push_back(index);
      } else {
        model_lines.erase(match);
      }
    }
    for (const auto& [line, index] : model_lines) divergence.model_only.push_back(index);
    if (!divergence.engine_only.empty() || !divergence.model_only.empty()) {
      std::sort(divergence.engine_only.begin(), divergence.engine_only.end());
      std::sort(divergence.model_only.begin(), divergence.model_only.end());
      return divergence;
    }
  }
  // An engine that stopped on a broken invariant diverged where it stopped.
  return std::nullopt;
}

std::string Session::export_vector(VectorMode mode) const {
  const Source reference = mode == VectorMode::cluster ? Source::cluster_model : Source::model;
  std::string text =
      "# A session of the lockstep playground: what was sent on each connection, and\n"
      "# what the reference model answered, as expect lines. Tokens are named $tN.\n";
  text += config_line(mode, limits_);
  const TokenNames names(entries_, reference);
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    text += input_line(inputs_[i], names);
    for (const auto& entry : entries_) {
      if (entry.kind == Entry::Kind::response && entry.source == reference && entry.input == i) {
        text += fmt::format("expect {} {} {}\n", entry.at.value, entry.connection, expected_response(entry, names));
      }
    }
  }
  text += names.order_lines();
  text += fmt::format("end {}\n", now_.value);
  return text;
}

std::string Session::timeline_svg() const { return timeline_.svg(now_, limits_, bug_); }

}  // namespace lockstep::web
