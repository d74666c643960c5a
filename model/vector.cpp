#include "model/vector.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <set>

#include <fmt/format.h>

#include "impl/decimal.hpp"

namespace lockstep {

namespace {

// A `#` at the start of a line or after white space starts a comment (a `#`
// inside a word, as in a key `k#1`, does not).
std::string_view strip_comment(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// Takes the next space-separated word off the front of `rest`.
std::string_view next_word(std::string_view& rest) {
  const auto space = rest.find(' ');
  const auto word = rest.substr(0, space);
  rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  return word;
}

struct LineParser {
  Vector& vector;
  int line_number;
  bool& seen_step;
  std::optional<TimeMs>& last_ordered_time;
  std::optional<TimeMs>& end_time;

  std::optional<VectorError> error(std::string message) const {
    return VectorError{line_number, std::move(message)};
  }

  std::optional<VectorError> parse_config(std::string_view rest) {
    if (seen_step) return error("config must come before any at, close, expect, order or end");
    while (!rest.empty()) {
      const auto setting = next_word(rest);
      const auto equals = setting.find('=');
      if (equals == std::string_view::npos) return error(fmt::format("expected NAME=VALUE, got '{}'", setting));
      const auto name = setting.substr(0, equals);
      const auto value = setting.substr(equals + 1);
      if (name == "mode") {
        if (value == "simple") {
          vector.mode = VectorMode::simple;
        } else if (value == "cluster") {
          vector.mode = VectorMode::cluster;
        } else {
          return error(fmt::format("mode must be simple or cluster, not '{}'", value));
        }
      } else if (auto problem = set_limit(vector.limits, name, value)) {
        return error(*problem);
      }
    }
    return std::nullopt;
  }

  std::optional<VectorError> parse_order(std::string_view rest) {
    if (end_time) return error("nothing may follow end");
    TokenOrder order;
    order.line = line_number;
    while (!rest.empty()) {
      const auto word = next_word(rest);
      if (word.size() < 2 || word[0] != '$') return error(fmt::format("order takes $names, not '{}'", word));
      const std::string name(word.substr(1));
      if (std::find(order.names.begin(), order.names.end(), name) != order.names.end()) {
        return error(fmt::format("order names ${} twice", name));
      }
      order.names.push_back(name);
    }
    if (order.names.size() < 2) return error("order takes two $names or more");
    seen_step = true;
    vector.orders.push_back(std::move(order));
    return std::nullopt;
  }

  std::optional<VectorError> parse_step(std::string_view directive, std::string_view rest) {
    VectorStep step;
    step.line = line_number;
    if (directive == "at") {
      step.kind = VectorStep::Kind::at;
    } else if (directive == "close") {
      step.kind = VectorStep::Kind::close;
    } else if (directive == "expect") {
      step.kind = VectorStep::Kind::expect;
    } else if (directive == "end") {
      step.kind = VectorStep::Kind::end;
    } else {
      return error(fmt::format("unknown directive '{}'", directive));
    }
    const auto time_text = next_word(rest);
    const auto time = parse_decimal(time_text);
    if (!time || *time > static_cast<std::uint64_t>(time_max.value)) {
      return error(fmt::format("'{}' is not a time in ms", time_text));
    }
    step.time = TimeMs{static_cast<std::int64_t>(*time)};
    if (end_time) return error("nothing may follow end");
    if (step.kind == VectorStep::Kind::end) {
      if (!rest.empty()) return error("end takes only a time");
      end_time = step.time;
    } else {
      step.connection = std::string(next_word(rest));
      if (step.connection.empty()) return error(fmt::format("{} needs a connection name", directive));
      if (step.kind == VectorStep::Kind::close) {
        if (!rest.empty()) return error("close takes only a time and a connection");
      } else {
        if (rest.empty()) return error(fmt::format("{} needs a line", directive));
        step.text = std::string(rest);
      }
    }
    if (step.kind != VectorStep::Kind::expect) {
      if (last_ordered_time && step.time < *last_ordered_time) {
        return error("times of at, close and end must not decrease");
      }
      last_ordered_time = step.time;
    }
    seen_step = true;
    vector.steps.push_back(std::move(step));
    return std::nullopt;
  }
};

}  // namespace

std::variant<Vector, VectorError> parse_vector(std::string_view text) {
  Vector vector;
  bool seen_step = false;
  std::optional<TimeMs> last_ordered_time;
  std::optional<TimeMs> end_time;
  int line_number = 0;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    const auto raw = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    ++line_number;
    auto rest = trim(strip_comment(raw));
    if (rest.empty()) continue;
    const auto directive = next_word(rest);
    LineParser parser{vector, line_number, seen_step, last_ordered_time, end_time};
    const auto problem = directive == "config"  ? parser.parse_config(rest)
                         : directive == "order" ? parser.parse_order(rest)
                                                : parser.parse_step(directive, rest);
    if (problem) return *problem;
  }
  if (vector.steps.empty()) return VectorError{line_number, "the vector has no steps"};
  if (end_time) {
    for (const auto& step : vector.steps) {
      if (step.time > *end_time) return VectorError{step.line, "a step lies after end"};
    }
    vector.final_time = *end_time;
  } else {
    for (const auto& step : vector.steps) vector.final_time = std::max(vector.final_time, step.time);
  }
  return vector;
}

std::vector<TimeMs> named_instants(const Vector& vector) {
  std::set<TimeMs> instants;
  for (const auto& step : vector.steps) instants.insert(step.time);
  return {instants.begin(), instants.end()};
}

int line_at_or_before(const Vector& vector, TimeMs instant) {
  int line = vector.steps.front().line;
  for (const auto& step : vector.steps) {
    if (step.time <= instant) line = std::max(line, step.line);
  }
  return line;
}

std::string_view comment_of(std::string_view line) {
  const auto code = strip_comment(line);
  if (code.size() == line.size()) return {};
  return trim(line.substr(code.size() + 1));
}

std::variant<Vector, VectorError> read_vector_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return VectorError{0, "cannot read the file"};
  std::stringstream text;
  text << file.rdbuf();
  auto parsed = parse_vector(text.str());
  if (auto* error = std::get_if<VectorError>(&parsed)) {
    return VectorError{error->line, fmt::format("bad vector: {}", error->message)};
  }
  return parsed;
}

}  // namespace lockstep
