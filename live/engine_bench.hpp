// `lockstep bench engine`: the engine's cost on a realistic mix over many
// keys, against the floor of a bare std::unordered_map on the same keys, and
// its memory per held key and per waiter. Figures come from one run, so the
// ratio is measured under the same machine load on both sides.
#pragma once

#include <cstdint>

namespace lockstep::live {

struct EngineBenchOptions {
  std::uint64_t keys = 1'000'000;
  std::uint64_t requests = 4'000'000;
  std::uint64_t seed = 1;
};

int run_engine_bench(const EngineBenchOptions& options);

}  // namespace lockstep::live
