#include "sim/simple/shrink.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/model.hpp"
#include "model/runner.hpp"
#include "model/vector.hpp"

namespace lockstep::sim {

namespace {

// A release whose acquire is not in the candidate carries a token that no
// grant of the vector can have.
constexpr std::uint64_t unissued_token_base = 1'000'000'000'000ULL;

std::string line_key(const std::string& line) {
  const auto end = line.find(' ', 2);
  return line.substr(2, end == std::string::npos ? std::string::npos : end - 2);
}

class VectorBuilder {
 public:
  VectorBuilder(const Limits& limits, TimeMs shift) : model_(limits), shift_(shift) {}

  void input(const InputRecord& input, std::size_t index) {
    advance_to(input.at);
    Outputs out;
    if (input.kind == InputRecord::Kind::close) {
      lines_.push_back(fmt::format("close {} c{}", time(input.at), input.connection.value));
      model_.on_close(input.connection, input.at, out);
    } else {
      std::string line = input.line;
      std::string shown = line;
      if (line[0] == 'R') {
        const auto found = granted_.find(input.release_of);
        const std::string key = line_key(line);
        if (found != granted_.end()) {
          line = fmt::format("R {} {}", key, found->second.first.value);
          // A name bound at an earlier instant. At the grant's own instant
          // the name is not bound yet (names bind when an instant is
          // judged), and the token's value holds only against a server
          // whose tokens are the model's: such inputs have no vector.
          shown = fmt::format("R {} $t{}", key, found->second.first.value);
          if (found->second.second == input.at) expressible_ = false;
        } else {
          line = fmt::format("R {} {}", key, unissued_token_base + index);
          shown = line;
        }
      } else {
        pending_.push_back({input.request, input.connection, line});
      }
      lines_.push_back(fmt::format("at {} c{} {}", time(input.at), input.connection.value, shown));
      model_.on_line(input.connection, line, input.at, out);
    }
    expect(input.at, out);
  }

  std::string finish(TimeMs end, const std::string& comment) {
    if (!expressible_) return {};
    advance_to(end);
    Outputs out;
    model_.advance(end, out);
    expect(end, out);
    std::string text;
    for (std::size_t start = 0; start < comment.size();) {
      const auto stop = comment.find('\n', start);
      text += "# " + comment.substr(start, stop == std::string::npos ? std::string::npos : stop - start) + "\n";
      start = stop == std::string::npos ? comment.size() : stop + 1;
    }
    const Limits& l = model_.limits();
    text += fmt::format("config max_keys={} max_waiters_per_key={} max_waiters={} sweep_ms={} max_lease_ms={} max_wait_ms={}\n",
                        l.max_keys, l.max_waiters_per_key, l.max_waiters, l.sweep_ms.value,
                        l.max_lease_ms.value, l.max_wait_ms.value);
    for (const auto& line : lines_) text += line + "\n";
    // Tokens granted at one instant come out in the order issued (one
    // sweep's hand-offs among them): without an `order` line a vector
    // would take them in any order.
    for (const auto& [instant, tokens] : granted_at_) {
      if (tokens.size() < 2) continue;
      text += "order";
      for (const auto token : tokens) text += fmt::format(" $t{}", token);
      text += fmt::format("  # granted at {}\n", instant);
    }
    text += fmt::format("end {}\n", time(end));
    return text;
  }

 private:
  struct Pending {
    RequestId request;
    ConnectionId connection;
    std::string line;
  };

  std::int64_t time(TimeMs at) const { return (at - shift_).value; }

  // Instant by instant, so each expect line carries the instant it fired at.
  void advance_to(TimeMs at) {
    for (auto due = model_.next_due(); due && *due < at; due = model_.next_due()) {
      Outputs out;
      model_.advance(*due, out);
      expect(*due, out);
    }
    Outputs out;
    model_.advance(at, out);
    expect(at, out);
  }

  void expect(TimeMs at, const Outputs& out) {
    // A token the vector's model granted is written by its name wherever a
    // response carries it (A, and the R or N that echo it), so that the
    // vector holds against a server whose tokens are not the model's: the
    // name binds to whatever token the server issued. Grants of this
    // instant first: a response may echo a token granted beside it.
    for (const auto& o : out) {
      if (o.response.kind != ResponseKind::granted) continue;
      named_tokens_.insert(o.response.token.value);
      granted_at_[time(at)].push_back(o.response.token.value);
    }
    for (const auto& o : out) {
      const Response& r = o.response;
      std::string shown = format_response(r);
      if (r.kind == ResponseKind::granted) shown = fmt::format("A $t{} {} {}", r.token.value, r.owner, r.key);
      const bool echoes_token = r.kind == ResponseKind::released || r.kind == ResponseKind::not_held;
      if (echoes_token && named_tokens_.contains(r.token.value)) {
        shown = fmt::format("{} $t{} {}", static_cast<char>(r.kind), r.token.value, r.key);
      }
      lines_.push_back(fmt::format("expect {} c{} {}", time(at), o.connection.value, shown));
      if (r.kind != ResponseKind::granted && r.kind != ResponseKind::timed_out && r.kind != ResponseKind::busy) continue;
      // The acquire it answers: the oldest in flight of that owner and key.
      const auto prefix = fmt::format("A {} {} ", r.key, r.owner);
      const auto found = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) {
        return p.connection == o.connection && p.line.rfind(prefix, 0) == 0;
      });
      if (found == pending_.end()) continue;
      if (r.kind == ResponseKind::granted) granted_[found->request] = {r.token, at};
      pending_.erase(found);
    }
  }

  Model model_;
  TimeMs shift_;
  std::vector<std::string> lines_;
  std::vector<Pending> pending_;
  std::map<RequestId, std::pair<Token, TimeMs>> granted_;
  std::set<std::uint64_t> named_tokens_;  // every token granted so far, written as $t<value>
  std::map<std::int64_t, std::vector<std::uint64_t>> granted_at_;  // the vector's instant -> tokens, as issued
  bool expressible_ = true;  // no release needs a token granted at its own instant
};

}  // namespace

std::string vector_for_inputs(const std::vector<InputRecord>& inputs, const Limits& limits, TimeMs end,
                              const std::string& comment) {
  // Shift time by whole sweep periods, so the sweeps stay where they were.
  const auto period = limits.sweep_ms.value;
  const TimeMs shift{inputs.empty() ? 0 : inputs.front().at.value / period * period};
  VectorBuilder builder(limits, shift);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    LOCKSTEP_ASSERT(inputs[i].kind != InputRecord::Kind::restart);
    builder.input(inputs[i], i);
  }
  return builder.finish(end, comment);
}

bool vector_fails(const std::string& vector_text, InjectedBug bug) {
  if (vector_text.empty()) return false;  // inputs no vector can express
  auto parsed = parse_vector(vector_text);
  if (std::holds_alternative<VectorError>(parsed)) return false;
  return run_vector(std::get<Vector>(parsed), ServiceKind::engine, bug).status == VectorVerdict::Status::fail;
}

namespace {

// What a vector is tried from: the inputs of the failing incarnation up to
// the failure, that whole incarnation, and the instant a vector ends at.
struct FailingSlice {
  std::vector<InputRecord> inputs;
  std::vector<InputRecord> incarnation;
  TimeMs end{0};
};

FailingSlice failing_slice(const RunResult& failed, const Violation& violation) {
  std::size_t begin = 0, cut = failed.inputs.size(), stop = failed.inputs.size();
  for (std::size_t i = 0; i < failed.inputs.size(); ++i) {
    const auto& input = failed.inputs[i];
    if (input.at > violation.at && cut == failed.inputs.size()) cut = i;
    if (input.kind != InputRecord::Kind::restart) continue;
    if (cut == failed.inputs.size()) {
      begin = i + 1;
    } else {
      stop = i;
      break;
    }
  }
  cut = std::min(cut, stop);
  FailingSlice slice;
  slice.inputs.assign(failed.inputs.begin() + static_cast<std::ptrdiff_t>(begin),
                      failed.inputs.begin() + static_cast<std::ptrdiff_t>(cut));
  slice.incarnation.assign(failed.inputs.begin() + static_cast<std::ptrdiff_t>(begin),
                           failed.inputs.begin() + static_cast<std::ptrdiff_t>(stop));
  slice.end = std::max(violation.at, slice.inputs.empty() ? TimeMs{0} : slice.inputs.back().at);
  return slice;
}

// The lines on `key`, and the closes of the connections that sent them.
std::vector<InputRecord> inputs_on_key(const std::vector<InputRecord>& inputs, const std::string& key) {
  std::vector<InputRecord> focused;
  std::set<std::uint64_t> connections;
  for (const auto& input : inputs) {
    if (input.kind == InputRecord::Kind::line && line_key(input.line) == key) {
      focused.push_back(input);
      connections.insert(input.connection.value);
    } else if (input.kind == InputRecord::Kind::close && connections.contains(input.connection.value)) {
      focused.push_back(input);
    }
  }
  return focused;
}

// ddmin: try removing each of n chunks; on success keep the rest, else
// cut finer, until single inputs cannot be removed. `evaluations` is what
// `fails` counts.
template <class Fails>
void ddmin(std::vector<InputRecord>& inputs, const Fails& fails, const std::uint64_t& evaluations,
           std::uint64_t evaluations_max) {
  std::size_t n = 2;
  while (inputs.size() >= 2 && evaluations < evaluations_max) {
    const std::size_t chunk = (inputs.size() + n - 1) / n;
    bool removed = false;
    for (std::size_t start = 0; start < inputs.size() && evaluations < evaluations_max; start += chunk) {
      std::vector<InputRecord> rest(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(start));
      rest.insert(rest.end(), inputs.begin() + static_cast<std::ptrdiff_t>(std::min(start + chunk, inputs.size())), inputs.end());
      if (fails(rest)) {
        inputs = std::move(rest);
        n = std::max<std::size_t>(n - 1, 2);
        removed = true;
        break;
      }
    }
    if (removed) continue;
    if (n >= inputs.size()) break;
    n = std::min(inputs.size(), n * 2);
  }
}

std::string shrunk_comment(const RunResult& failed, const Violation& violation, std::size_t kept,
                           std::size_t before) {
  return fmt::format(
      "Shrunk by `lockstep sim` from seed {} ({} of {} inputs kept).\n"
      "The engine with bug {} fails it; a correct engine passes it.\n"
      "The simulation's first violation ({}) at {} ms: {}",
      failed.params.seed, kept, before, bug_name(failed.params.bug), violation.checker, violation.at.value,
      violation.what);
}

}  // namespace

ShrinkResult shrink_failure(const RunResult& failed, const Violation& violation, std::uint64_t evaluations_max) {
  ShrinkResult result;
  const Limits& limits = failed.params.limits;
  const InjectedBug bug = failed.params.bug;
  // The inputs of the failing incarnation, up to the failure; if the
  // engine's answers to those are still right (the first symptom was one a
  // vector cannot show), the whole incarnation.
  FailingSlice slice = failing_slice(failed, violation);
  std::vector<InputRecord>& inputs = slice.inputs;
  TimeMs& end = slice.end;
  const auto fails = [&](const std::vector<InputRecord>& candidate) {
    ++result.evaluations;
    return vector_fails(vector_for_inputs(candidate, limits, end, ""), bug);
  };
  if ((inputs.empty() || !fails(inputs)) && slice.incarnation.size() > inputs.size()) {
    inputs = slice.incarnation;
    end = std::max(end, inputs.back().at + failed.params.limits.max_lease_ms + failed.params.limits.sweep_ms);
  }
  result.inputs_before = inputs.size();
  if (inputs.empty() || !fails(inputs)) {
    result.note = "the failure needs more than a vector can say (a restart, a server fault, or the "
                  "clients' view across the network); the sim command reproduces it";
    return result;
  }
  // First cut: only what touches the key the violation is about.
  if (!violation.key.empty()) {
    auto focused = inputs_on_key(inputs, violation.key);
    if (!focused.empty() && focused.size() < inputs.size() && fails(focused)) inputs = std::move(focused);
  }
  ddmin(inputs, fails, result.evaluations, evaluations_max);
  result.inputs_after = inputs.size();
  const std::string comment = shrunk_comment(failed, violation, inputs.size(), result.inputs_before);
  result.vector_text = vector_for_inputs(inputs, limits, end, comment);
  result.note = fmt::format("{} of {} inputs kept after {} runs", inputs.size(), result.inputs_before, result.evaluations);
  return result;
}

}  // namespace lockstep::sim
