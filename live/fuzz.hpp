// The black-box fuzzer's driver: a random concurrent workload from one seed
// against a live server, in real time, recorded as a history (one monotonic
// clock: a send is stamped before the write, a response when it is read).
// The workload aims at the edges of the contract: leases and waits near the
// sweep period and each other, try-locks, several owners and pipelined
// requests per connection, releases with the current, a stale or a random
// token, the same owner asking again, connections closed with waiters,
// limits reached, malformed lines, and (with a command to run the target)
// restarts. The checker then judges the history (check).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "impl/limits.hpp"
#include "live/resource_watch.hpp"
#include "check/history.hpp"

namespace lockstep::live {

struct FuzzOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;      // --target
  std::string command;         // --exec template ({port}, limits, {state_file})
  Limits limits;
  std::uint32_t clients = 16;  // connections open at once
  std::uint32_t keys = 8;
  double duration_s = 10;
  std::uint64_t seed = 1;
  std::int64_t tolerance_ms = 50;
  double restart_every_s = 0;  // 0: never (needs command)
  double mean_gap_ms = 0;      // between one client's requests; 0: from clients and keys
  // Also send lines that only this project's strict reading of the wire
  // syntax calls malformed (two spaces, token 0, an empty line): off by
  // default, so a server that reads them leniently is not reported.
  bool strict_syntax = false;
  // The leases and waits asked, inclusive; within them the workload keeps
  // its edges (short ones, ones near the sweep period, try-locks when 0 is
  // allowed). -1: unset, default_ranges fills it in.
  std::int64_t lease_min_ms = -1, lease_max_ms = -1;
  std::int64_t wait_min_ms = -1, wait_max_ms = -1;
  // The target has no limits worth reaching: no line past max_line_bytes
  // and no lease or wait past its maximum are sent (the limits given are
  // then only the checker's).
  bool clear_of_limits = false;
};

// The ranges of leases and waits not given: leases 1 ms to 1.5 sweep
// periods (at least 400 ms), waits 0 to 1.5 s, within the maxima of the
// limits.
void default_ranges(FuzzOptions& options);

struct FuzzRun {
  history::History history;
  std::string error;  // why the run could not be made (then history is partial)
  // The target was reached: started and accepting (--exec), or accepting
  // (--target). When false, `error` says why and nothing was sent.
  bool started = false;
  std::string target_output;  // the tail of what a target that could not start printed
  std::uint64_t sent = 0, received = 0, restarts = 0, reconnects = 0;
  std::uint64_t held_back = 0;  // turns the workload waited for a silent target
  // The longest a release waited for its answer (answered at once by a
  // server that runs): a target that was not scheduled shows here.
  std::int64_t slowest_release_us = 0;
  // The longest the fuzzer itself ran later than it asked to (a poll that
  // returned past its timeout, a turn of its loop that took that long), and
  // when it began: the machine did not schedule it. A target on the same
  // machine may have waited as long, and then answers late by as much
  // however correct it is; --tolerance-ms must cover it.
  std::int64_t tester_stall_us = 0, tester_stall_at_us = 0;
  // What the target (`server`, each restart a run of it) and the fuzzer
  // cost (live/resource_watch.hpp); none for a --target the fuzzer did not
  // start.
  std::vector<ProcessFigures> processes;
  ProcessFigures tester;
};

// `on_started` runs once the target accepts connections, before the
// workload begins (the plan is printed then, after any reason it could not).
FuzzRun run_fuzz(const FuzzOptions& options, const std::function<void()>& on_started = {});

}  // namespace lockstep::live
