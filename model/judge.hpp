// Judges what a service sent against a vector's `expect` lines, one instant
// at a time, with the token rules of docs/protocol.md, "Conformance vectors": `$name` binds to the token
// found at its place and must match once bound; two names never share one
// token; a token bound at an instant is greater than every token bound at an
// earlier one; and the tokens of an `order` line increase in the order it
// names them (which fixes the order of tokens granted at one instant). Both the in-process runner and the live runner (against a
// server over TCP) judge through this class, so they agree by construction.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "impl/protocol.hpp"
#include "model/vector.hpp"

namespace lockstep {

// One response as a client saw it: the vector's connection name and the line.
struct ObservedResponse {
  std::string connection;
  std::string line;
};

class VectorJudge {
 public:
  explicit VectorJudge(const Vector& vector);

  // A problem with the vector's expect lines themselves, found at construction.
  const std::optional<VectorError>& problem() const { return problem_; }

  // The request line of an `at` step with its `$names` replaced by their tokens.
  std::variant<std::string, VectorError> request_line(const VectorStep& at) const;

  // Judges everything sent at `instant`, which the vector names. On success
  // the names bound at this instant are kept for later instants.
  std::optional<VectorError> judge_instant(TimeMs instant, const std::vector<ObservedResponse>& sent);

  // The failure for responses sent at an instant the vector does not name.
  VectorError unexpected(TimeMs instant, const std::vector<ObservedResponse>& sent,
                         int line_hint) const;

  const std::map<std::string, Token>& bindings() const { return bindings_; }

 private:
  struct Pattern {
    int line = 0;
    TimeMs time;
    std::string connection;
    std::string text;  // as written, for messages
    char kind = 'E';
    bool any_error = false;  // a bare `E`
    std::string error_text;
    std::optional<std::uint64_t> literal_token;
    std::string token_name;  // `$name` without the `$`
    std::string owner;
    std::string key;
  };

  struct Candidate {
    std::string connection;
    std::string line;
    std::optional<Response> response;
  };

  static std::variant<Pattern, VectorError> parse_pattern(const VectorStep& step);
  bool compatible(const Pattern& pattern, const Candidate& candidate,
                  std::map<std::string, Token>& fresh) const;
  // With `ordered`, a matching counts only if the `order` lines hold.
  bool match_from(std::size_t index, const std::vector<const Pattern*>& patterns,
                  const std::vector<Candidate>& candidates, std::vector<bool>& used,
                  std::map<std::string, Token>& fresh, bool ordered) const;
  // The first `order` line that the bound names break, with `fresh` bound
  // beside the names bound before.
  const TokenOrder* broken_order(const std::map<std::string, Token>& fresh) const;
  std::optional<Token> bound(const std::string& name, const std::map<std::string, Token>& fresh) const;
  VectorError describe_mismatch(const std::vector<const Pattern*>& patterns,
                                const std::vector<Candidate>& candidates, TimeMs instant) const;

  std::vector<Pattern> patterns_;
  std::vector<TokenOrder> orders_;
  std::optional<VectorError> problem_;
  std::map<std::string, Token> bindings_;
  std::optional<Token> highest_bound_;
  int last_line_ = 0;
};

// What is wrong with a vector as written, before any service runs it: an
// expect line that is not a response, an `at` line that uses a `$name` no
// expect line binds at an earlier instant. A runner refuses such a file as
// bad input rather than report it as a failing service.
std::optional<VectorError> vector_problem(const Vector& vector);

}  // namespace lockstep
