// How long a cluster went without answering after each nemesis fault, read
// from the run's history: for a fault at t, the time from t to the first
// answer that is not `E` (A, T, R, N, B) to a request sent at t or later,
// whichever node gave it. Requests in flight at t do not count: an answer
// to one of those may come from a commit made before the fault. A fault
// after which nothing was answered before the run's end counts up to the
// history's last event, and is marked so.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "check/history.hpp"

namespace lockstep::live {

struct NemesisFaultAt {
  std::int64_t t_us = 0;
  std::string kind;  // as --nemesis names it
};

struct Unavailability {
  std::vector<std::int64_t> gaps_us;  // one per fault, in the order given
  int unanswered = 0;                 // faults after which nothing was answered
};

std::map<std::string, Unavailability> unavailability(const history::History& history,
                                                     const std::vector<NemesisFaultAt>& faults);

// "unavailability after partition-node: min 1.9 s, median 2.3 s, max 2.8 s (4 faults)", one per kind.
std::vector<std::string> unavailability_lines(const std::map<std::string, Unavailability>& by_kind);

}  // namespace lockstep::live
