// The order of tokens across keys (docs/protocol.md: tokens are unique and
// increase in the order issued), checked against the instants the keys'
// searches allow for each grant: a check of the whole history, beside the
// per-key searches.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "check/build.hpp"
#include "check/checker.hpp"
#include "check/frontier.hpp"

namespace lockstep::history {

// Every key's verdict, by incarnation and key.
using KeyVerdicts = std::map<std::pair<std::uint32_t, std::string>, KeyVerdict>;

// Appends at most one finding (check `tokens`) to `result.violations`: the
// first pair of grants whose tokens are out of the order they were issued
// in. A key missing from `keys`, or not explained, bounds its grants by
// their requests and arrivals only.
void check_tokens(const Built& built, const KeyVerdicts& keys, CheckResult& result);

// Whether no pair is out of order (check_tokens finds nothing).
bool tokens_in_order(const Built& built, const KeyVerdicts& keys);

}  // namespace lockstep::history
