#include "model/explorer_config.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace lockstep {

namespace {

// ---- words of the TLC config language (and of the TLA+ definitions we read)

struct Word {
  enum class Kind { name, number, string, symbol };
  Kind kind = Kind::name;
  std::string text;
};

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Splits text into words, dropping `\*` line comments and `(* *)` comments.
std::vector<Word> words_of(std::string_view text) {
  std::vector<Word> words;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (text.substr(i, 2) == "\\*") {
      i = text.find('\n', i);
      if (i == std::string_view::npos) i = text.size();
    } else if (text.substr(i, 2) == "(*") {
      const auto end = text.find("*)", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
    } else if (c == '"') {
      const auto end = text.find('"', i + 1);
      const auto stop = end == std::string_view::npos ? text.size() : end;
      words.push_back({Word::Kind::string, std::string(text.substr(i + 1, stop - i - 1))});
      i = stop + 1;
    } else if (is_name_char(c)) {
      std::size_t j = i;
      while (j < text.size() && is_name_char(text[j])) ++j;
      const auto word = text.substr(i, j - i);
      const bool digits = std::all_of(word.begin(), word.end(),
                                      [](char d) { return std::isdigit(static_cast<unsigned char>(d)); });
      words.push_back({digits ? Word::Kind::number : Word::Kind::name, std::string(word)});
      i = j;
    } else {
      // Two-character symbols first: <-, .., ==
      const auto pair = text.substr(i, 2);
      if (pair == "<-" || pair == ".." || pair == "==") {
        words.push_back({Word::Kind::symbol, std::string(pair)});
        i += 2;
      } else {
        words.push_back({Word::Kind::symbol, std::string(1, c)});
        ++i;
      }
    }
  }
  return words;
}

// ---- values ----------------------------------------------------------------

// A constant's value: a scalar (integer, string, boolean, model value) or a set of scalars.
struct Value {
  bool is_set = false;
  std::vector<Word> elements;  // the scalar itself when !is_set
};

class ValueReader {
 public:
  ValueReader(const std::vector<Word>& words, std::size_t at) : words_(words), at_(at) {}

  std::variant<Value, std::string> read() {
    if (peek("{")) {
      ++at_;
      Value set{true, {}};
      if (peek("}")) {
        ++at_;
        return set;
      }
      while (true) {
        auto scalar = read_scalar();
        if (auto* error = std::get_if<std::string>(&scalar)) return *error;
        set.elements.push_back(std::get<Word>(scalar));
        if (peek(",")) {
          ++at_;
        } else if (peek("}")) {
          ++at_;
          return set;
        } else {
          return std::string("a set needs ',' or '}'");
        }
      }
    }
    auto scalar = read_scalar();
    if (auto* error = std::get_if<std::string>(&scalar)) return *error;
    // a..b, as a set of integers
    if (peek("..")) {
      ++at_;
      auto high = read_scalar();
      if (auto* error = std::get_if<std::string>(&high)) return *error;
      const auto& low_word = std::get<Word>(scalar);
      const auto& high_word = std::get<Word>(high);
      if (low_word.kind != Word::Kind::number || high_word.kind != Word::Kind::number) {
        return std::string("a range needs two integers");
      }
      Value set{true, {}};
      for (auto n = std::stoll(low_word.text); n <= std::stoll(high_word.text); ++n) {
        set.elements.push_back({Word::Kind::number, std::to_string(n)});
      }
      return set;
    }
    return Value{false, {std::get<Word>(scalar)}};
  }

  std::size_t position() const { return at_; }

 private:
  bool peek(std::string_view symbol) const {
    return at_ < words_.size() && words_[at_].kind == Word::Kind::symbol &&
           words_[at_].text == symbol;
  }
  std::variant<Word, std::string> read_scalar() {
    if (at_ >= words_.size()) return std::string("a value is missing");
    const auto& word = words_[at_];
    if (word.kind == Word::Kind::symbol) return fmt::format("unexpected '{}'", word.text);
    ++at_;
    return word;
  }

  const std::vector<Word>& words_;
  std::size_t at_;
};

// `Definition == value` in the MC module's text.
std::variant<Value, std::string> definition_in(std::string_view module_text,
                                               const std::string& name) {
  const auto words = words_of(module_text);
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i].kind == Word::Kind::name && words[i].text == name &&
        words[i + 1].kind == Word::Kind::symbol && words[i + 1].text == "==") {
      return ValueReader(words, i + 2).read();
    }
  }
  return fmt::format("'{}' is not defined in the MC module", name);
}

// ---- conversions to the bounds' fields --------------------------------------

std::optional<std::string> as_names(const Value& value, std::vector<std::string>& out) {
  if (!value.is_set) return "expected a set of names";
  std::set<std::string> names;
  for (const auto& element : value.elements) {
    if (element.kind == Word::Kind::number) return "expected names, not numbers";
    if (element.text.empty() || element.text.size() > 250 ||
        !std::all_of(element.text.begin(), element.text.end(),
                     [](char c) { return c >= '!' && c <= '~'; })) {
      return fmt::format("'{}' cannot be a key, owner or connection name", element.text);
    }
    names.insert(element.text);
  }
  out.assign(names.begin(), names.end());
  return std::nullopt;
}

std::optional<std::string> as_integers(const Value& value, std::vector<std::int64_t>& out) {
  if (!value.is_set) return "expected a set of integers";
  std::set<std::int64_t> numbers;
  for (const auto& element : value.elements) {
    if (element.kind != Word::Kind::number) return "expected integers";
    numbers.insert(std::stoll(element.text));
  }
  out.assign(numbers.begin(), numbers.end());
  return std::nullopt;
}

template <typename Integer>
std::optional<std::string> as_integer(const Value& value, Integer& out) {
  if (value.is_set || value.elements.front().kind != Word::Kind::number) {
    return "expected an integer";
  }
  if (value.elements.front().text.size() > 12) return "too large for a bound";
  out = static_cast<Integer>(std::stoll(value.elements.front().text));
  return std::nullopt;
}

std::optional<std::string> as_boolean(const Value& value, bool& out) {
  const auto& text = value.elements.empty() ? std::string() : value.elements.front().text;
  if (value.is_set || (text != "TRUE" && text != "FALSE")) return "expected TRUE or FALSE";
  out = text == "TRUE";
  return std::nullopt;
}

std::optional<std::string> assign(SpecBounds& b, const std::string& name, const Value& value) {
  if (name == "Keys") return as_names(value, b.keys);
  if (name == "Owners") return as_names(value, b.owners);
  if (name == "Conns") return as_names(value, b.conns);
  if (name == "Leases") return as_integers(value, b.leases_ms);
  if (name == "Waits") return as_integers(value, b.waits_ms);
  if (name == "SweepMs") return as_integer(value, b.sweep_ms);
  if (name == "MaxKeys") return as_integer(value, b.max_keys);
  if (name == "MaxWaitersPerKey") return as_integer(value, b.max_waiters_per_key);
  if (name == "MaxWaiters") return as_integer(value, b.max_waiters);
  if (name == "MaxTime") return as_integer(value, b.max_time_ms);
  if (name == "MaxToken") return as_integer(value, b.max_token);
  if (name == "LifoHandoff") return as_boolean(value, b.lifo_handoff);
  if (name == "SweepFirst") return as_boolean(value, b.sweep_first);
  return "not a constant of LockServer";
}

// What the explorer can represent: the spec's ASSUME plus the sizes its state
// encoding and connection masks allow.
std::optional<std::string> check(const SpecBounds& b) {
  if (b.keys.empty() || b.owners.empty() || b.conns.empty()) {
    return std::string("Keys, Owners and Conns must not be empty");
  }
  if (b.keys.size() > 8 || b.owners.size() > 8 || b.conns.size() > 8) {
    return std::string("at most 8 keys, owners and connections");
  }
  if (b.leases_ms.empty() || b.leases_ms.front() < 1) return std::string("Leases must be >= 1");
  if (b.waits_ms.empty() || b.waits_ms.front() < 0) return std::string("Waits must be >= 0");
  if (b.sweep_ms < 1) return std::string("SweepMs must be >= 1");
  if (b.max_keys < 1) return std::string("MaxKeys must be >= 1 (the model's limit)");
  if (b.max_time_ms < 0 || b.max_time_ms > 1000) return std::string("MaxTime must be in 0..1000");
  if (b.max_token > 1000) return std::string("MaxToken must be at most 1000");
  if (b.lifo_handoff && b.sweep_first) {
    return std::string("the model injects one bug at a time: LifoHandoff or SweepFirst");
  }
  return std::nullopt;
}

const std::vector<std::string> constant_names = {
    "Keys", "Owners", "Conns", "Leases", "Waits", "SweepMs", "MaxKeys", "MaxWaitersPerKey",
    "MaxWaiters", "MaxTime", "MaxToken", "LifoHandoff", "SweepFirst"};

bool is_section(const Word& word) {
  static const std::set<std::string> sections = {
      "SPECIFICATION", "INIT", "NEXT", "CONSTANT", "CONSTANTS", "INVARIANT", "INVARIANTS",
      "PROPERTY", "PROPERTIES", "CHECK_DEADLOCK", "CONSTRAINT", "CONSTRAINTS", "SYMMETRY",
      "VIEW", "ACTION_CONSTRAINT", "ACTION_CONSTRAINTS", "ALIAS", "POSTCONDITION"};
  return word.kind == Word::Kind::name && sections.contains(word.text);
}

}  // namespace

Limits SpecBounds::limits() const {
  Limits limits;
  limits.max_keys = max_keys;
  limits.max_waiters_per_key = max_waiters_per_key;
  limits.max_waiters = max_waiters;
  limits.sweep_ms = DurationMs{sweep_ms};
  limits.max_lease_ms = DurationMs{leases_ms.back()};
  limits.max_wait_ms = DurationMs{waits_ms.back()};
  return limits;
}

InjectedBug SpecBounds::bug() const {
  if (lifo_handoff) return InjectedBug::lifo_handoff;
  if (sweep_first) return InjectedBug::sweep_before_timeouts;
  return InjectedBug::none;
}

std::uint64_t SpecBounds::token_bound() const {
  return max_token + 1 + keys.size() * static_cast<std::uint64_t>(max_time_ms);
}

std::variant<SpecConfig, std::string> parse_spec_config(std::string_view config_text,
                                                        std::string_view module_text) {
  const auto words = words_of(config_text);
  SpecConfig config;
  std::set<std::string> assigned;
  std::size_t i = 0;
  std::string section;
  while (i < words.size()) {
    if (is_section(words[i])) {
      section = words[i++].text;
      continue;
    }
    const auto& word = words[i];
    if (section == "SPECIFICATION") {
      config.specification = word.text;
      ++i;
    } else if (section == "INVARIANT" || section == "INVARIANTS") {
      config.invariants.push_back(word.text);
      ++i;
    } else if (section == "PROPERTY" || section == "PROPERTIES") {
      config.properties.push_back(word.text);
      ++i;
    } else if (section == "CONSTANT" || section == "CONSTANTS") {
      if (word.kind != Word::Kind::name || i + 1 >= words.size()) {
        return fmt::format("expected 'Name = value' in CONSTANTS, found '{}'", word.text);
      }
      const auto& name = word.text;
      const auto& how = words[i + 1].text;
      std::variant<Value, std::string> value;
      if (how == "=") {
        ValueReader reader(words, i + 2);
        value = reader.read();
        i = reader.position();
      } else if (how == "<-") {
        if (i + 2 >= words.size()) return fmt::format("{} <- needs a definition", name);
        value = definition_in(module_text, words[i + 2].text);
        i += 3;
      } else {
        return fmt::format("expected '=' or '<-' after {}", name);
      }
      if (auto* error = std::get_if<std::string>(&value)) return fmt::format("{}: {}", name, *error);
      if (auto error = assign(config.bounds, name, std::get<Value>(value))) {
        return fmt::format("{}: {}", name, *error);
      }
      assigned.insert(name);
    } else if (section.empty()) {
      return fmt::format("'{}' before any section", word.text);
    } else {
      ++i;  // sections the explorer does not need (CHECK_DEADLOCK FALSE, ...)
    }
  }
  for (const auto& name : constant_names) {
    if (!assigned.contains(name)) return fmt::format("constant {} is not given", name);
  }
  if (auto error = check(config.bounds)) return *error;
  return config;
}

}  // namespace lockstep
