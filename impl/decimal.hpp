// Strict decimal numbers, shared by the wire codec and configuration parsing:
// digits only, no sign, no leading zeros (the single digit 0 excepted), no
// overflow. A number written any other way is malformed.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lockstep {

std::optional<std::uint64_t> parse_decimal(std::string_view text);

}  // namespace lockstep
