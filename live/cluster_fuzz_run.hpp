// `lockstep fuzz --mode cluster`, from its command line to its exit code:
// simple mode's options refused, the nodes given or the command that starts
// them checked with the nemesis and the etcd members, the limits and ranges
// settled and stated, the run made (live/cluster_fuzz.hpp), what the
// clients and the nemesis did printed, and the history judged as a
// cluster's (live/history_verdict.hpp).
#pragma once

#include "live/fuzz_request.hpp"

namespace lockstep::live {

int run_cluster_fuzz_request(FuzzRequest& request);

}  // namespace lockstep::live
