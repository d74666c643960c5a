// `lockstep miss-rate`, once its options are parsed: the share of bug
// seeds the simulator catches that the black-box checker misses, on swarm
// seeds of a range (sim/history/miss_rate.hpp runs them), printed as a table per
// bug with a note for each seed missed or undecided, the rates, and the
// wall time. Exit 0 when every clean seed conforms and every bug seed the
// simulator's own clients'-side checker reports (so visible from the
// clients) is reported by the black-box checker too; each other missed
// seed is listed with the simulator's checkers that saw it. 1 otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::live {

struct MissRateRequest {
  std::string mode = "simple";  // or "cluster"
  std::pair<std::uint64_t, std::uint64_t> seed_range{1, 20};
  std::vector<std::string> bugs;  // empty: every bug of the mode, and `none`
  std::uint64_t budget_states = 3'000'000;
  std::uint32_t nodes = 3;
};

int run_miss_rate(const MissRateRequest& request);

}  // namespace lockstep::live
