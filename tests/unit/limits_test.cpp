// Limits are validated configuration: defaults follow docs/protocol.md, every
// value is range-checked, and a refused setting changes nothing.
#include <gtest/gtest.h>

#include "impl/limits.hpp"

namespace lockstep {
namespace {

TEST(Limits, DefaultsAreTheContracts) {
  const Limits limits;
  EXPECT_EQ(limits.max_keys, 1'000'000u);
  EXPECT_EQ(limits.max_waiters_per_key, 1'024u);
  EXPECT_EQ(limits.max_waiters, 1'000'000u);
  EXPECT_EQ(limits.sweep_ms.value, 5'000);
  EXPECT_EQ(limits.max_lease_ms.value, 86'400'000);
  EXPECT_EQ(limits.max_wait_ms.value, 86'400'000);
  EXPECT_EQ(limits.max_line_bytes, 1'024u);
  EXPECT_FALSE(validate(limits).has_value());
}

TEST(Limits, SetsEachByName) {
  Limits limits;
  for (const auto name : limit_names) {
    EXPECT_FALSE(set_limit(limits, name, "100").has_value()) << name;
  }
  EXPECT_EQ(limits.max_keys, 100u);
  EXPECT_EQ(limits.sweep_ms.value, 100);
  EXPECT_EQ(limits.max_line_bytes, 100u);
}

TEST(Limits, RefusedSettingChangesNothing) {
  Limits limits;
  const Limits before = limits;
  EXPECT_TRUE(set_limit(limits, "max_keys", "0").has_value());
  EXPECT_TRUE(set_limit(limits, "sweep_ms", "0").has_value());
  EXPECT_TRUE(set_limit(limits, "max_lease_ms", "0").has_value());
  EXPECT_TRUE(set_limit(limits, "max_line_bytes", "10").has_value());
  EXPECT_TRUE(set_limit(limits, "max_keys", "-1").has_value());
  EXPECT_TRUE(set_limit(limits, "max_keys", "1e6").has_value());
  EXPECT_TRUE(set_limit(limits, "max_keys", "99999999999999999999999").has_value());
  EXPECT_TRUE(set_limit(limits, "no_such_limit", "1").has_value());
  EXPECT_EQ(limits, before);
}

TEST(Limits, ZeroWaitersMeansNoQueueing) {
  Limits limits;
  EXPECT_FALSE(set_limit(limits, "max_waiters_per_key", "0").has_value());
  EXPECT_FALSE(set_limit(limits, "max_wait_ms", "0").has_value());
}

}  // namespace
}  // namespace lockstep
