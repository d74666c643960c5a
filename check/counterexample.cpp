#include "check/counterexample.hpp"

#include <map>
#include <optional>
#include <set>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "impl/protocol.hpp"
#include "model/runner.hpp"

namespace lockstep::history {

namespace {

// A token the server sent that no grant of the vector stands for (a stale
// or random one): it becomes a value far above any token the model issues
// in a vector this short, so it stays a token nobody holds.
constexpr std::uint64_t foreign_token_base = 9'000'000'000'000'000'000ULL;
constexpr std::uint64_t foreign_token_span = 1'000'000'000'000'000'000ULL;

struct Answer {
  char kind = 0;
  std::string owner;
  std::string text;        // as the vector writes it (model) or as received (server)
  std::int64_t at_us = 0;  // the server's: when it arrived
  std::uint64_t token = 0;
};

// The vector being written, with the reference model run alongside it so
// that every `expect` is the model's answer at the instant of the line.
class Writer {
 public:
  Writer(const Limits& limits, std::string key) : key_(std::move(key)), model_(make_service(ServiceKind::model, limits)) {}

  void run_until(std::int64_t ms) {
    while (const auto due = model_->next_due()) {
      if (due->value > ms) break;
      Outputs out;
      model_->advance(*due, out);
      emit(out, due->value);
    }
  }

  void request(std::uint32_t conn, const std::string& line, const Request& request, std::int64_t ms) {
    run_until(ms);
    // A release names its token as the vector knows it: the model token the
    // server's stands for, written `$name` in the file.
    std::string text = line, model_line = line;
    if (const auto* release = std::get_if<ReleaseRequest>(&request)) {
      const auto token = vector_token(release->token.value);
      text = fmt::format("R {} {}", key_, token_text(token));
      model_line = fmt::format("R {} {}", key_, token);
    }
    lines_.push_back(fmt::format("at {} c{} {}", ms, conn, text));
    Outputs out;
    model_->on_line(ConnectionId{conn}, model_line, TimeMs{ms}, out);
    emit(out, ms);
  }

  void close(std::uint32_t conn, std::int64_t ms) {
    run_until(ms);
    lines_.push_back(fmt::format("close {} c{}", ms, conn));
    Outputs out;
    model_->on_close(ConnectionId{conn}, TimeMs{ms}, out);
    emit(out, ms);
  }

  // The server's answers on the key, per connection, to align with the
  // model's: a grant at the same place names the server's token.
  void observe(std::uint32_t conn, Answer answer) { observed_[conn].push_back(std::move(answer)); }

  const std::vector<std::string>& lines() const { return lines_; }
  const std::map<std::uint32_t, std::vector<Answer>>& expected() const { return expected_; }
  const std::map<std::uint32_t, std::vector<Answer>>& observed() const { return observed_; }

 private:
  std::uint64_t vector_token(std::uint64_t server_token) const {
    const auto found = server_to_model_.find(server_token);
    if (found != server_to_model_.end()) return found->second;
    return foreign_token_base + server_token % foreign_token_span;
  }

  std::string token_text(std::uint64_t model_token) const {
    const auto found = names_.find(model_token);
    return found == names_.end() ? std::to_string(model_token) : found->second;
  }

  void emit(const Outputs& out, std::int64_t ms) {
    for (const auto& outbound : out) {
      const auto& r = outbound.response;
      const auto conn = static_cast<std::uint32_t>(outbound.connection.value);
      if (r.kind == ResponseKind::granted && !names_.contains(r.token.value)) {
        names_.emplace(r.token.value, fmt::format("$t{}", names_.size() + 1));
      }
      std::string text;
      switch (r.kind) {
        case ResponseKind::granted: text = fmt::format("A {} {} {}", token_text(r.token.value), r.owner, r.key); break;
        case ResponseKind::timed_out: text = fmt::format("T {} {}", r.owner, r.key); break;
        case ResponseKind::busy: text = fmt::format("B {} {}", r.owner, r.key); break;
        case ResponseKind::released: text = fmt::format("R {} {}", token_text(r.token.value), r.key); break;
        case ResponseKind::not_held: text = fmt::format("N {} {}", token_text(r.token.value), r.key); break;
        case ResponseKind::error: text = "E"; break;
      }
      lines_.push_back(fmt::format("expect {} c{} {}", ms, conn, text));
      auto& expected = expected_[conn];
      const std::size_t place = expected.size();
      expected.push_back(Answer{static_cast<char>(r.kind), r.owner, text, ms * 1000, r.token.value});
      // The server's grant at the same place on this connection is the
      // grant this model token stands for: its token maps to the model's.
      const auto seen = observed_.find(conn);
      if (r.kind == ResponseKind::granted && seen != observed_.end() && place < seen->second.size() &&
          seen->second[place].kind == 'A') {
        server_to_model_.emplace(seen->second[place].token, r.token.value);
      }
    }
  }

  std::string key_;
  std::unique_ptr<LockService> model_;
  std::vector<std::string> lines_;
  std::map<std::uint64_t, std::string> names_;               // model token -> $name
  std::map<std::uint64_t, std::uint64_t> server_to_model_;  // server token -> model token
  std::map<std::uint32_t, std::vector<Answer>> expected_, observed_;
};

// The first place where the model's answers and the server's part, as a
// comment for the vector; nothing when they agree on every connection.
struct Difference {
  std::int64_t at_us = 0;  // on the history's clock
  std::string text;
};

std::optional<Difference> first_difference(const Writer& writer, std::int64_t origin_us) {
  const std::vector<Answer> none;
  std::set<std::uint32_t> conns;
  for (const auto& [conn, answers] : writer.expected()) conns.insert(conn);
  for (const auto& [conn, answers] : writer.observed()) conns.insert(conn);
  std::optional<std::pair<std::int64_t, std::string>> first;
  const auto consider = [&](std::int64_t at_us, std::string text) {
    if (!first || at_us < first->first) first = std::pair{at_us, std::move(text)};
  };
  for (const auto conn : conns) {
    const auto e = writer.expected().find(conn);
    const auto o = writer.observed().find(conn);
    const auto& expected = e == writer.expected().end() ? none : e->second;
    const auto& observed = o == writer.observed().end() ? none : o->second;
    for (std::size_t i = 0; i < std::max(expected.size(), observed.size()); ++i) {
      if (i < expected.size() && i < observed.size()) {
        if (expected[i].kind == observed[i].kind && expected[i].owner == observed[i].owner) continue;
        consider(observed[i].at_us,
                 fmt::format("on c{}, answer {}: the contract requires `{}` at {} ms; the server sent `{}` at +{:.3f} ms",
                             conn, i + 1, expected[i].text, expected[i].at_us / 1000,
                             observed[i].text, (observed[i].at_us - origin_us) / 1000.0));
      } else if (i < expected.size()) {
        consider(origin_us + expected[i].at_us,
                 fmt::format("on c{}, answer {}: the contract requires `{}` at {} ms; the server sent nothing", conn,
                             i + 1, expected[i].text, expected[i].at_us / 1000));
      } else {
        consider(observed[i].at_us, fmt::format("on c{}, answer {}: the server sent `{}` at +{:.3f} ms; the contract "
                                                "requires no further answer",
                                                conn, i + 1, observed[i].text, (observed[i].at_us - origin_us) / 1000.0));
      }
      break;
    }
  }
  if (!first) return std::nullopt;
  return Difference{first->first, first->second};
}

struct Built {
  std::optional<Difference> difference;  // none: the model gives the server's answers
  std::string why_not;
  std::string body;  // the config, `at`, `close`, `expect` and `end` lines
};

Built build(const History& history, std::uint32_t incarnation, const std::string& key, std::int64_t cut_us) {
  const Limits& limits = history.header.limits;
  // The incarnation's events before the cut, each request on the key
  // parsed once, and the connections that asked for the key.
  struct Kept {
    const Event* event;
    std::optional<Request> request;  // a send of a request on the key
  };
  std::vector<Kept> events;
  std::set<std::uint32_t> asking;
  std::uint32_t seen = 0;
  for (const auto& event : history.events) {
    if (event.kind == EventKind::down) ++seen;
    if (seen > incarnation || event.t_us >= cut_us) break;
    if (seen < incarnation || event.kind == EventKind::down) continue;
    Kept kept{&event, std::nullopt};
    if (event.kind == EventKind::send) {
      const auto parsed = parse_request(event.line, limits);
      const auto* request = std::get_if<Request>(&parsed);
      if (request && std::visit([&](const auto& r) { return r.key == key; }, *request)) {
        kept.request = *request;
        asking.insert(event.conn);
      }
    }
    events.push_back(std::move(kept));
  }
  Built built;
  if (asking.empty()) {
    built.why_not = "no request for the key before the cut";
    return built;
  }
  const std::int64_t origin_us = events.front().event->t_us;
  const auto ms_of = [&](std::int64_t t_us) { return (t_us - origin_us) / 1000; };

  Writer writer(limits, key);
  // The server's answers on the key come first, so that the model's grants
  // can be matched to them as the vector is written.
  for (const auto& [event, request] : events) {
    if (event->kind != EventKind::recv || !asking.contains(event->conn)) continue;
    const auto response = parse_response(event->line);
    if (!response || response->key != key) continue;
    writer.observe(event->conn, Answer{static_cast<char>(response->kind), response->owner, event->line, event->t_us,
                                       response->token.value});
  }
  std::set<std::uint32_t> closed;
  for (const auto& [event, request] : events) {
    if (!asking.contains(event->conn) || closed.contains(event->conn)) continue;
    const auto ms = ms_of(event->t_us);
    if (event->kind == EventKind::close || event->kind == EventKind::eof) {
      closed.insert(event->conn);
      writer.close(event->conn, ms);
    } else if (request) {
      writer.request(event->conn, event->line, *request, ms);
    }
  }
  const std::int64_t end_ms = ms_of(cut_us);
  writer.run_until(end_ms);

  built.difference = first_difference(writer, origin_us);
  if (!built.difference) {
    built.why_not = "at the instants the requests were sent the contract gives the answers the server sent; the "
                    "violation needs a timing no single vector fixes";
    return built;
  }
  std::string& text = built.body;
  text += fmt::format("config max_keys={} max_waiters_per_key={} max_waiters={} sweep_ms={} max_lease_ms={} "
                      "max_wait_ms={}\n",
                      limits.max_keys, limits.max_waiters_per_key, limits.max_waiters, limits.sweep_ms.value,
                      limits.max_lease_ms.value, limits.max_wait_ms.value);
  for (const auto& line : writer.lines()) text += line + "\n";
  text += fmt::format("end {}\n", end_ms);
  return built;
}

}  // namespace

CounterExample counterexample_vector(const History& history, std::uint32_t incarnation, const std::string& key,
                                     std::int64_t cut_us) {
  CounterExample result;
  if (history.header.mode == Mode::cluster) {
    // The vector is replayed on simple mode's reference model; a cluster's
    // (its Expires late, its requests with sessions) is not written yet.
    result.why_not = "a cluster's history gets no vector: vectors are written for simple mode";
    return result;
  }
  auto whole = build(history, incarnation, key, cut_us);
  if (!whole.difference) {
    result.why_not = std::move(whole.why_not);
    return result;
  }
  // What follows the first difference adds nothing: the vector ends a
  // millisecond after it. The model's lines up to there are those of the
  // whole (the same events, one deterministic model), so the difference
  // found on the whole still stands in the shorter vector.
  const std::int64_t shorter_cut = whole.difference->at_us + 1000;
  const auto body = shorter_cut < cut_us ? build(history, incarnation, key, shorter_cut).body : whole.body;
  result.written = true;
  result.text = fmt::format("# Counter-example of key `{}` (incarnation {}) from a real-time run{}.\n", key, incarnation,
                            history.header.target.empty() ? "" : fmt::format(" against {}", history.header.target));
  result.text += "# The key's requests at the millisecond they were sent; the expectations are the\n";
  result.text += "# reference model's answers at those instants. What the server did instead:\n";
  result.text += fmt::format("#   {}\n", whole.difference->text);
  result.text += body;
  return result;
}

}  // namespace lockstep::history
