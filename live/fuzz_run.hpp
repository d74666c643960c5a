// `lockstep fuzz` in simple mode, from its command line to its exit code:
// the options checked against each other (those of cluster mode refused),
// the target read, the limits and ranges settled and stated, the run made
// (live/fuzz.hpp), what it saw of the target and of the machine printed,
// and the history judged (live/history_verdict.hpp).
#pragma once

#include "live/fuzz_request.hpp"

namespace lockstep::live {

int run_fuzz_request(FuzzRequest& request);

}  // namespace lockstep::live
