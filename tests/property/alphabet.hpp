// The small alphabets and limits that the property tests draw from: few
// keys, owners and connections and tight limits, so that random sequences
// reach contention, capacity, expiry, sweeps and timeouts within a few steps.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <string>

#include "impl/bugs.hpp"
#include "impl/limits.hpp"
#include "impl/units.hpp"

namespace lockstep::testing {

inline Limits small_limits() {
  Limits limits;
  limits.max_keys = 3;
  limits.max_waiters_per_key = 2;
  limits.max_waiters = 4;
  limits.sweep_ms = DurationMs{20};
  limits.max_lease_ms = DurationMs{50};
  limits.max_wait_ms = DurationMs{60};
  return limits;
}

inline constexpr int key_count = 4;  // one more than max_keys
inline constexpr int owner_count = 3;
inline constexpr int connection_count = 3;

// A GoogleTest parameter name for a catalogue bug ("lifo-handoff" -> "lifo_handoff").
inline std::string bug_test_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string name = info.param;
  for (auto& c : name) c = c == '-' ? '_' : c;
  return name;
}

// Every bug of the catalogue, by name, for parameterized tests.
inline std::vector<const char*> catalogue_bug_names() {
  std::vector<const char*> names;
  for (const auto& entry : bug_catalogue()) names.push_back(entry.name.data());
  return names;
}

inline std::string key_name(int index) { return "k" + std::to_string(index); }
inline std::string owner_name(int index) { return "o" + std::to_string(index); }

inline rc::Gen<int> gen_key() { return rc::gen::inRange(0, key_count); }
inline rc::Gen<int> gen_owner() { return rc::gen::inRange(0, owner_count); }
inline rc::Gen<int> gen_connection() { return rc::gen::inRange(0, connection_count); }
// Leases and waits cluster at the edges of the limits and at small values.
inline rc::Gen<std::int64_t> gen_lease() {
  return rc::gen::oneOf(rc::gen::inRange<std::int64_t>(1, 51), rc::gen::element<std::int64_t>(1, 20, 40, 50));
}
inline rc::Gen<std::int64_t> gen_wait() {
  return rc::gen::oneOf(rc::gen::just<std::int64_t>(0), rc::gen::inRange<std::int64_t>(1, 61),
                        rc::gen::element<std::int64_t>(1, 20, 60));
}
// Time steps: often none (same instant), often small, sometimes across a sweep.
inline rc::Gen<std::int64_t> gen_time_step() {
  return rc::gen::weightedOneOf<std::int64_t>({{3, rc::gen::just<std::int64_t>(0)},
                                               {5, rc::gen::inRange<std::int64_t>(1, 8)},
                                               {2, rc::gen::inRange<std::int64_t>(8, 45)}});
}

}  // namespace lockstep::testing
