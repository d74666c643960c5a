#include "live/check_history.hpp"

#include <variant>

#include <fmt/format.h>

namespace lockstep::live {

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
  return judge_history(recorded, request.outputs, "lockstep.check-history");
}

}  // namespace lockstep::live
