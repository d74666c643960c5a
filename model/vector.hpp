// The conformance vector format (docs/protocol.md, "Conformance vectors"): parsing a `.vec` file into the
// steps a runner replays. Parsing checks the file itself (known directives,
// times that never decrease, a valid config); what the service answers is
// judged elsewhere (model/judge.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "impl/limits.hpp"
#include "impl/units.hpp"

namespace lockstep {

enum class VectorMode { simple, cluster };

struct VectorStep {
  enum class Kind { at, close, expect, end };
  Kind kind = Kind::at;
  int line = 0;            // 1-based line number in the file
  TimeMs time;
  std::string connection;  // empty for `end`
  std::string text;        // the request line of `at`, the response of `expect`
};

// `order $a $b ...`: the tokens bound to these names were issued in this
// order (each greater than the one before). Tokens bound at different
// instants are ordered by the instants already; this says the order of
// tokens granted at one instant, such as the hand-offs of one sweep.
struct TokenOrder {
  int line = 0;
  std::vector<std::string> names;  // without the `$`, two or more, distinct
};

struct Vector {
  Limits limits;
  VectorMode mode = VectorMode::simple;
  std::vector<VectorStep> steps;  // in file order
  std::vector<TokenOrder> orders;  // in file order
  // Where the run stops: `end T`, or else the latest time the file names.
  TimeMs final_time;
};

struct VectorError {
  int line = 0;
  std::string message;
};

std::variant<Vector, VectorError> parse_vector(std::string_view text);

// Every instant the vector names (in at, close, expect or end), ascending.
std::vector<TimeMs> named_instants(const Vector& vector);

// The last line of the file whose step lies at or before `instant`: where a
// failure at that instant is reported when no expect line is to blame.
int line_at_or_before(const Vector& vector, TimeMs instant);

// The comment on one line of a vector file (after a `#` that starts one),
// trimmed; empty when the line has none.
std::string_view comment_of(std::string_view line);

// Reads and parses a file; an unreadable file is an error at line 0.
std::variant<Vector, VectorError> read_vector_file(const std::string& path);

}  // namespace lockstep
