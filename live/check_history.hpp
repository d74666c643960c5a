// `lockstep check-history`: a history recorded by any client, read from its
// file and judged (live/history_verdict.hpp), under the rules its header
// names or those the command line sets over them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "live/history_verdict.hpp"

namespace lockstep::live {

struct CheckHistoryRequest {
  std::string file;
  VerdictOutputs outputs;
  // The reading, over the header's: the rules ("simple" or "cluster"; empty:
  // the header's), and cluster mode's clock allowance and maximum lateness.
  std::string mode;
  std::optional<std::int64_t> clock_allowance_ms, max_lateness_ms;
  // Judge by the slow reference instead (check/reference.hpp).
  bool reference = false;
};

// Prints the verdict; returns the exit code (2 for a file that cannot be
// read, or cluster options on a history read in simple mode).
int check_history_file(const CheckHistoryRequest& request);

}  // namespace lockstep::live
