#include "model/judge.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "impl/decimal.hpp"

namespace lockstep {

namespace {

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto space = text.find(' ', start);
    const auto end = space == std::string::npos ? text.size() : space;
    words.push_back(text.substr(start, end - start));
    if (space == std::string::npos) break;
    start = space + 1;
  }
  return words;
}

std::string describe(const std::string& connection, const std::string& line) {
  return fmt::format("'{}' on {}", line, connection);
}

}  // namespace

VectorJudge::VectorJudge(const Vector& vector) : orders_(vector.orders) {
  for (const auto& step : vector.steps) {
    last_line_ = std::max(last_line_, step.line);
    if (step.kind != VectorStep::Kind::expect) continue;
    auto parsed = parse_pattern(step);
    if (auto* error = std::get_if<VectorError>(&parsed)) {
      if (!problem_) problem_ = *error;
      continue;
    }
    patterns_.push_back(std::get<Pattern>(std::move(parsed)));
  }
  // An `order` line speaks of tokens expect lines bind; a name no expect
  // line binds could never be checked.
  for (const auto& order : orders_) {
    for (const auto& name : order.names) {
      const bool bound_somewhere = std::any_of(patterns_.begin(), patterns_.end(),
                                               [&](const Pattern& p) { return p.token_name == name; });
      if (!bound_somewhere && !problem_) {
        problem_ = VectorError{order.line, fmt::format("order names ${}, which no expect line binds", name)};
      }
    }
  }
}

std::optional<Token> VectorJudge::bound(const std::string& name, const std::map<std::string, Token>& fresh) const {
  if (const auto found = bindings_.find(name); found != bindings_.end()) return found->second;
  if (const auto found = fresh.find(name); found != fresh.end()) return found->second;
  return std::nullopt;
}

const TokenOrder* VectorJudge::broken_order(const std::map<std::string, Token>& fresh) const {
  for (const auto& order : orders_) {
    // The names bound so far, in the order the line gives, must carry
    // increasing tokens (the others are checked once they are bound).
    std::optional<Token> previous;
    for (const auto& name : order.names) {
      const auto token = bound(name, fresh);
      if (!token) continue;
      if (previous && *token <= *previous) return &order;
      previous = token;
    }
  }
  return nullptr;
}

std::variant<VectorJudge::Pattern, VectorError> VectorJudge::parse_pattern(const VectorStep& step) {
  Pattern p;
  p.line = step.line;
  p.time = step.time;
  p.connection = step.connection;
  p.text = step.text;
  const auto bad = [&](std::string why) {
    return VectorError{step.line, fmt::format("bad expect line '{}': {}", step.text, why)};
  };
  if (step.text == "E") {
    p.any_error = true;
    return p;
  }
  if (step.text.starts_with("E ")) {
    p.error_text = step.text.substr(2);
    return p;
  }
  const auto w = words_of(step.text);
  if (w[0].size() != 1) return bad("unknown response kind");
  p.kind = w[0][0];
  const auto take_token = [&](const std::string& word) -> bool {
    if (word.size() > 1 && word[0] == '$') {
      p.token_name = word.substr(1);
      return true;
    }
    p.literal_token = parse_decimal(word);
    return p.literal_token.has_value() && *p.literal_token > 0;
  };
  switch (p.kind) {
    case 'A':
      if (w.size() != 4 || !take_token(w[1])) return bad("expected A <token> <owner> <key>");
      p.owner = w[2];
      p.key = w[3];
      return p;
    case 'T':
    case 'B':
      if (w.size() != 3) return bad("expected T|B <owner> <key>");
      p.owner = w[1];
      p.key = w[2];
      return p;
    case 'R':
    case 'N':
      if (w.size() != 3 || !take_token(w[1])) return bad("expected R|N <token> <key>");
      p.key = w[2];
      return p;
    default:
      return bad("unknown response kind");
  }
}

std::variant<std::string, VectorError> VectorJudge::request_line(const VectorStep& at) const {
  auto words = words_of(at.text);
  for (auto& word : words) {
    if (word.size() < 2 || word[0] != '$') continue;
    const auto bound = bindings_.find(word.substr(1));
    if (bound == bindings_.end()) {
      return VectorError{at.line, fmt::format("'{}' is not bound to a token yet", word)};
    }
    word = std::to_string(bound->second.value);
  }
  return fmt::format("{}", fmt::join(words, " "));
}

bool VectorJudge::compatible(const Pattern& p, const Candidate& c,
                             std::map<std::string, Token>& fresh) const {
  if (p.connection != c.connection || !c.response) return false;
  const Response& r = *c.response;
  if (static_cast<char>(r.kind) != p.kind) return false;
  if (r.kind == ResponseKind::error) return p.any_error || r.reason == p.error_text;
  if (r.key != p.key) return false;
  if ((r.kind == ResponseKind::granted || r.kind == ResponseKind::timed_out ||
       r.kind == ResponseKind::busy) &&
      r.owner != p.owner) {
    return false;
  }
  if (r.kind == ResponseKind::timed_out || r.kind == ResponseKind::busy) return true;
  if (p.literal_token) return r.token.value == *p.literal_token;
  // A name: bound earlier, bound earlier at this instant, or fresh.
  if (const auto old = bindings_.find(p.token_name); old != bindings_.end()) {
    return old->second == r.token;
  }
  if (const auto now = fresh.find(p.token_name); now != fresh.end()) return now->second == r.token;
  for (const auto& [name, token] : bindings_) {
    if (token == r.token) return false;  // two names for one token
  }
  for (const auto& [name, token] : fresh) {
    if (token == r.token) return false;
  }
  if (highest_bound_ && r.token <= *highest_bound_) return false;  // tokens increase
  fresh.emplace(p.token_name, r.token);
  return true;
}

bool VectorJudge::match_from(std::size_t index, const std::vector<const Pattern*>& patterns,
                             const std::vector<Candidate>& candidates, std::vector<bool>& used,
                             std::map<std::string, Token>& fresh, bool ordered) const {
  if (index == patterns.size()) return !ordered || broken_order(fresh) == nullptr;
  for (std::size_t j = 0; j < candidates.size(); ++j) {
    if (used[j]) continue;
    auto attempt = fresh;
    if (!compatible(*patterns[index], candidates[j], attempt)) continue;
    used[j] = true;
    if (match_from(index + 1, patterns, candidates, used, attempt, ordered)) {
      fresh = std::move(attempt);
      return true;
    }
    used[j] = false;
  }
  return false;
}

VectorError VectorJudge::describe_mismatch(const std::vector<const Pattern*>& patterns,
                                           const std::vector<Candidate>& candidates,
                                           TimeMs instant) const {
  // Pair greedily to name what is missing and what came instead.
  std::vector<bool> used(candidates.size(), false);
  std::map<std::string, Token> fresh;
  std::vector<const Pattern*> missing;
  for (const auto* pattern : patterns) {
    bool found = false;
    for (std::size_t j = 0; j < candidates.size() && !found; ++j) {
      auto attempt = fresh;
      if (!used[j] && compatible(*pattern, candidates[j], attempt)) {
        used[j] = true;
        fresh = std::move(attempt);
        found = true;
      }
    }
    if (!found) missing.push_back(pattern);
  }
  std::vector<std::string> extra;
  for (std::size_t j = 0; j < candidates.size(); ++j) {
    if (!used[j]) extra.push_back(describe(candidates[j].connection, candidates[j].line));
  }
  const std::string got = extra.empty() ? "nothing else" : fmt::format("{}", fmt::join(extra, ", "));
  if (!missing.empty()) {
    const auto* first = missing.front();
    return VectorError{first->line, fmt::format("at {}: expected {} got {}", instant.value,
                                                describe(first->connection, first->text), got)};
  }
  // Everything expected was found but more was sent (or the only pairing
  // breaks a token rule, which greedy pairing cannot tell apart).
  int line = 0;
  for (const auto* pattern : patterns) line = std::max(line, pattern->line);
  return VectorError{line == 0 ? last_line_ : line,
                     fmt::format("at {}: expected nothing more, got {}", instant.value, got)};
}

std::optional<VectorError> VectorJudge::judge_instant(TimeMs instant,
                                                      const std::vector<ObservedResponse>& sent) {
  std::vector<const Pattern*> patterns;
  for (const auto& pattern : patterns_) {
    if (pattern.time == instant) patterns.push_back(&pattern);
  }
  std::vector<Candidate> candidates;
  for (const auto& observed : sent) {
    candidates.push_back({observed.connection, observed.line, parse_response(observed.line)});
  }
  std::vector<bool> used(candidates.size(), false);
  std::map<std::string, Token> fresh;
  if (patterns.size() != candidates.size() || !match_from(0, patterns, candidates, used, fresh, true)) {
    // What was sent matches the expect lines, but only with tokens in
    // another order than an `order` line says: name that line.
    std::vector<bool> unordered_used(candidates.size(), false);
    std::map<std::string, Token> unordered;
    if (patterns.size() == candidates.size() &&
        match_from(0, patterns, candidates, unordered_used, unordered, false)) {
      if (const auto* order = broken_order(unordered)) {
        std::vector<std::string> values;
        for (const auto& name : order->names) {
          const auto token = bound(name, unordered);
          values.push_back(token ? fmt::format("${} = {}", name, token->value) : fmt::format("${} not yet bound", name));
        }
        return VectorError{order->line, fmt::format("at {}: the tokens were not issued in the order `order ${}` "
                                                    "states: {}",
                                                    instant.value, fmt::join(order->names, " $"),
                                                    fmt::join(values, ", "))};
      }
    }
    return describe_mismatch(patterns, candidates, instant);
  }
  for (const auto& [name, token] : fresh) {
    bindings_.emplace(name, token);
  }
  for (const auto& [name, token] : fresh) {
    if (!highest_bound_ || token > *highest_bound_) highest_bound_ = token;
  }
  return std::nullopt;
}

VectorError VectorJudge::unexpected(TimeMs instant, const std::vector<ObservedResponse>& sent,
                                    int line_hint) const {
  std::vector<std::string> lines;
  for (const auto& observed : sent) lines.push_back(describe(observed.connection, observed.line));
  return VectorError{line_hint, fmt::format("at {} (an instant the vector does not name): expected "
                                            "nothing, got {}",
                                            instant.value, fmt::join(lines, ", "))};
}

std::optional<VectorError> vector_problem(const Vector& vector) {
  VectorJudge judge(vector);
  if (judge.problem()) return judge.problem();
  // Where each name is first bound: the earliest expect line that names it
  // where a token stands (A, R and N carry one, second word).
  std::map<std::string, TimeMs> bound_at;
  for (const auto& step : vector.steps) {
    if (step.kind != VectorStep::Kind::expect) continue;
    const auto words = words_of(step.text);
    if (words.size() < 2 || words[1].size() < 2 || words[1][0] != '$') continue;
    const auto [where, added] = bound_at.emplace(words[1].substr(1), step.time);
    if (!added) where->second = std::min(where->second, step.time);
  }
  for (const auto& step : vector.steps) {
    if (step.kind != VectorStep::Kind::at) continue;
    for (const auto& word : words_of(step.text)) {
      if (word.size() < 2 || word[0] != '$') continue;
      const auto found = bound_at.find(word.substr(1));
      if (found == bound_at.end()) {
        return VectorError{step.line, fmt::format("'{}' is bound by no expect line", word)};
      }
      if (found->second >= step.time) {
        return VectorError{step.line, fmt::format("'{}' is bound only at {}: an at line may use a name bound at an "
                                                  "earlier instant",
                                                  word, found->second.value)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace lockstep
