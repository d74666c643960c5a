#include "live/check_history.hpp"

#include <cstdlib>
#include <variant>

#include <fmt/format.h>

#include "check/reference.hpp"

namespace lockstep::live {

namespace {

// `--reference`: the slow reference's verdict (check/reference.hpp),
// on a history no larger than it reads.
int reference_verdict(const history::History& recorded, const std::string& file) {
  if (const auto refusal = history::reference_refusal(recorded)) {
    fmt::print(stderr, "check-history: --reference: {}: {}\n", file, *refusal);
    return 2;
  }
  history::ReferenceOptions options;
  options.trace = std::getenv("LOCKSTEP_REFERENCE_TRACE") != nullptr;  // each explanation, step by step
  const auto result = history::check_reference(recorded, options);
  using V = history::ReferenceResult::Verdict;
  if (result.least_lateness_ms >= 0) fmt::print("least lateness: {} ms\n", result.least_lateness_ms);
  fmt::print("states: {}\n", result.states);
  switch (result.verdict) {
    case V::conforms:
      fmt::print("reference: conforms\n");
      return 0;
    case V::violation:
      fmt::print("reference: violation: {}\n", result.reason);
      return 1;
    case V::unknown:
      fmt::print("reference: unknown: {}\n", result.reason);
      return 2;
  }
  return 2;
}

}  // namespace

int check_history_file(const CheckHistoryRequest& request) {
  auto read = history::read_history_file(request.file);
  if (const auto* error = std::get_if<history::ReadError>(&read)) {
    fmt::print(stderr, "lockstep check-history: {}:{}: {}\n", request.file, error->line, error->message);
    return 2;
  }
  auto& recorded = std::get<history::History>(read);
  auto& header = recorded.header;
  if (!request.mode.empty()) header.mode = request.mode == "cluster" ? history::Mode::cluster : history::Mode::simple;
  if (header.mode != history::Mode::cluster && (request.clock_allowance_ms || request.max_lateness_ms)) {
    fmt::print(stderr, "lockstep check-history: --clock-allowance-ms and --max-lateness-ms read a cluster's history: {} is "
                       "read in simple mode (give --mode cluster)\n",
               request.file);
    return 2;
  }
  if (header.mode == history::Mode::simple) {
    header.clock_allowance_ms = 0;
    header.max_lateness_ms = -1;
  }
  if (request.clock_allowance_ms) header.clock_allowance_ms = *request.clock_allowance_ms;
  if (request.max_lateness_ms) header.max_lateness_ms = *request.max_lateness_ms;
  if (request.reference) return reference_verdict(recorded, request.file);
  return judge_history(recorded, request.outputs, "lockstep.check-history");
}

}  // namespace lockstep::live
