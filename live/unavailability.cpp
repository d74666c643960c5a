#include "live/unavailability.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

namespace lockstep::live {

std::map<std::string, Unavailability> unavailability(const history::History& history,
                                                     const std::vector<NemesisFaultAt>& faults) {
  // Every answer that is not E, with when its request was sent: a cluster
  // client sends one request at a time on a connection, so an answer
  // answers the last line sent on its connection.
  struct Answer {
    std::int64_t sent_us, answered_us;
  };
  std::vector<Answer> answers;
  std::unordered_map<std::uint32_t, std::int64_t> last_send;
  const std::int64_t end_us = history.events.empty() ? 0 : history.events.back().t_us;
  for (const auto& event : history.events) {
    if (event.kind == history::EventKind::send) last_send[event.conn] = event.t_us;
    if (event.kind != history::EventKind::recv || event.line.empty() || event.line[0] == 'E') continue;
    if (const auto sent = last_send.find(event.conn); sent != last_send.end()) {
      answers.push_back({sent->second, event.t_us});
    }
  }
  std::map<std::string, Unavailability> by_kind;
  for (const auto& fault : faults) {
    std::int64_t first = -1;
    for (const auto& answer : answers) {
      if (answer.sent_us >= fault.t_us && (first < 0 || answer.answered_us < first)) first = answer.answered_us;
    }
    auto& kind = by_kind[fault.kind];
    if (first < 0) {
      ++kind.unanswered;
      first = std::max(end_us, fault.t_us);
    }
    kind.gaps_us.push_back(first - fault.t_us);
  }
  return by_kind;
}

std::vector<std::string> unavailability_lines(const std::map<std::string, Unavailability>& by_kind) {
  std::vector<std::string> lines;
  for (const auto& [kind, figures] : by_kind) {
    if (figures.gaps_us.empty()) continue;
    auto gaps = figures.gaps_us;
    std::sort(gaps.begin(), gaps.end());
    const auto ms = [](std::int64_t us) { return static_cast<double>(us) / 1000.0; };
    lines.push_back(fmt::format("unavailability after {}: min {:.0f} ms, median {:.0f} ms, max {:.0f} ms ({} faults{})",
                                kind, ms(gaps.front()), ms(gaps[gaps.size() / 2]), ms(gaps.back()), gaps.size(),
                                figures.unanswered > 0
                                    ? fmt::format(", {} with no answer before the run's end", figures.unanswered)
                                    : std::string()));
  }
  return lines;
}

}  // namespace lockstep::live
