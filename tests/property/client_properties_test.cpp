// Properties of the engine judged from its responses alone, by the
// ClientChecker (model/client_checker.hpp), with no model in the loop:
// tokens unique and increasing, at most one live grant per key, FIFO
// hand-off, nothing early, every request answered exactly once, no limit
// exceeded. Random sequences of operations over small alphabets run through
// the engine; RapidCheck shrinks a failure to the shortest sequence.
// The second half shows the checker bites: with each bug of the catalogue
// that responses can reveal, RapidCheck must find a violation.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>

#include <fmt/format.h>

#include "impl/engine.hpp"
#include "model/client_checker.hpp"
#include "tests/property/alphabet.hpp"

namespace lockstep::testing {
namespace {

struct Operation {
  enum class Kind { acquire, release, close, advance };
  Kind kind = Kind::advance;
  int connection = 0;
  int key = 0;
  int owner = 0;
  std::int64_t lease = 1;
  std::int64_t wait = 0;
  int token_choice = 0;  // which token a release carries, resolved when it runs
  std::int64_t step = 0;
};

std::ostream& operator<<(std::ostream& os, const Operation& op) {
  switch (op.kind) {
    case Operation::Kind::acquire:
      return os << fmt::format("+{} c{} A {} {} {} {}", op.step, op.connection, key_name(op.key), owner_name(op.owner), op.lease, op.wait);
    case Operation::Kind::release:
      return os << fmt::format("+{} c{} R {} token#{}", op.step, op.connection, key_name(op.key), op.token_choice);
    case Operation::Kind::close:
      return os << fmt::format("+{} close c{}", op.step, op.connection);
    case Operation::Kind::advance:
      return os << fmt::format("+{}", op.step);
  }
  return os;
}

rc::Gen<Operation> gen_operation() {
  using Kind = Operation::Kind;
  const auto with = [](Kind kind) {
    return rc::gen::apply(
        [kind](int connection, int key, int owner, std::int64_t lease, std::int64_t wait, int token,
               std::int64_t step) {
          return Operation{kind, connection, key, owner, lease, wait, token, step};
        },
        gen_connection(), gen_key(), gen_owner(), gen_lease(), gen_wait(), rc::gen::inRange(0, 4),
        gen_time_step());
  };
  return rc::gen::weightedOneOf<Operation>(
      {{6, with(Kind::acquire)}, {4, with(Kind::release)}, {1, with(Kind::close)}, {2, with(Kind::advance)}});
}

// Drives the engine with the operations and the checker with what it saw.
std::vector<std::string> violations_of(const std::vector<Operation>& operations, InjectedBug bug) {
  Engine engine({small_limits(), Token{1}, 4, bug});
  ClientChecker checker(small_limits());
  std::map<int, Token> current, previous;  // tokens last granted per key, as the clients saw
  std::array<std::uint64_t, connection_count> generation{};
  TimeMs now{0};
  Outputs out;
  const auto deliver = [&] {
    for (const auto& o : out) {
      checker.on_response(now, o);
      if (o.response.kind == ResponseKind::granted) {
        const int key = o.response.key[1] - '0';
        previous[key] = current[key];
        current[key] = o.response.token;
      }
    }
    out.clear();
  };
  // Moves time instant by instant, so each response is seen when it was sent.
  const auto advance_to = [&](TimeMs target) {
    for (auto due = engine.next_due(); due && *due <= target; due = engine.next_due()) {
      now = *due;
      engine.advance(now, out);
      deliver();
      checker.on_time(now);
    }
    now = target;
    engine.advance(now, out);
    deliver();
    checker.on_time(now);
  };
  const auto connection = [&](int slot) {
    return ConnectionId{static_cast<std::uint64_t>(slot) * 1'000'000 + generation[static_cast<std::size_t>(slot)]};
  };
  for (const auto& op : operations) {
    // Time moves first: deliver what fires up to the new instant.
    // Time moves first, so that the responses of an operation's own call
    // are its answer and its release hand-off only: a client can then tell
    // which request each response answers.
    advance_to(now + DurationMs{op.step});
    const auto key = key_name(op.key);
    const auto owner = owner_name(op.owner);
    switch (op.kind) {
      case Operation::Kind::acquire: {
        const Request request = AcquireRequest{key, owner, DurationMs{op.lease}, DurationMs{op.wait}};
        checker.on_request(now, connection(op.connection), request);
        engine.on_request(connection(op.connection), request, now, out);
        deliver();
        checker.end_request(now);
        break;
      }
      case Operation::Kind::release: {
        const Token choices[] = {current[op.key], previous[op.key], Token{1}, Token{engine.token_mark().value + 1}};
        Token token = choices[op.token_choice];
        if (token.value == 0) token = Token{1};
        const Request request = ReleaseRequest{key, token};
        checker.on_request(now, connection(op.connection), request);
        engine.on_request(connection(op.connection), request, now, out);
        deliver();
        checker.end_request(now);
        break;
      }
      case Operation::Kind::close:
        engine.on_close(connection(op.connection), now, out);
        deliver();
        checker.on_close(now, connection(op.connection));
        ++generation[static_cast<std::size_t>(op.connection)];
        break;
      case Operation::Kind::advance:
        engine.advance(now, out);
        deliver();
        break;
    }
    checker.on_time(now);
  }
  // Drain: let every wait and lease end; everything queued must be answered.
  advance_to(now + DurationMs{200});
  if (engine.key_count() != 0) {
    auto v = checker.violations();
    v.push_back(fmt::format("{} keys still registered after every lease ended and a sweep ran", engine.key_count()));
    return v;
  }
  return checker.violations();
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

RC_GTEST_PROP(ClientProperties, HoldForEveryOperationSequence, ()) {
  const auto operations = *rc::gen::container<std::vector<Operation>>(gen_operation());
  const auto violations = violations_of(operations, InjectedBug::none);
  RC_ASSERT(joined(violations) == "");
}

class ClientPropertiesCatchBug : public ::testing::TestWithParam<const char*> {};

TEST_P(ClientPropertiesCatchBug, FindsAViolation) {
  const auto bug = bug_from_name(GetParam());
  ASSERT_TRUE(bug.has_value());
  const bool passed = rc::check(fmt::format("client properties with {}", GetParam()), [&] {
    const auto operations = *rc::gen::container<std::vector<Operation>>(gen_operation());
    RC_ASSERT(joined(violations_of(operations, *bug)) == "");
  });
  EXPECT_FALSE(passed) << "no violation found with " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Catalogue, ClientPropertiesCatchBug,
                         ::testing::ValuesIn(catalogue_bug_names()),
                         bug_test_name);

}  // namespace
}  // namespace lockstep::testing
