#include "sim/core/swarm.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "impl/assert.hpp"

namespace lockstep::sim {

namespace {

class ProgressBar {
 public:
  ProgressBar(std::FILE* out, bool on, std::uint64_t total) : out_(out), on_(on), total_(total) {}
  void show(std::uint64_t done, double share_of_current, std::uint64_t failed) const {
    if (!on_) return;
    const double share = std::clamp(
        (static_cast<double>(done) + std::clamp(share_of_current, 0.0, 1.0)) / static_cast<double>(total_), 0.0, 1.0);
    constexpr int width = 40;
    const int filled = static_cast<int>(share * width);
    fmt::print(out_, "\r[{}{}] {}/{} seeds, {} failed ", std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(width - filled), '.'), done, total_, failed);
    std::fflush(out_);
  }
  void clear() const {
    if (on_) fmt::print(out_, "\r{}\r", std::string(72, ' '));
  }

 private:
  std::FILE* out_;
  bool on_;
  std::uint64_t total_;
};

// The violations a failure report prints.
constexpr std::size_t reported_violations_max = 5;

void add_rows(std::vector<SummaryRow>& into, const std::vector<SummaryRow>& rows) {
  if (into.empty()) {
    into = rows;
    return;
  }
  LOCKSTEP_ASSERT(into.size() == rows.size());  // one mode, one order of rows
  for (std::size_t i = 0; i < rows.size(); ++i) into[i].second += rows[i].second;
}

}  // namespace

void print_failure(std::FILE* out, const FailedSeed& failure) {
  fmt::print(out, "\nFAIL seed {}: {} violation(s)\n  params: {}\n", failure.seed, failure.violation_count,
             failure.params);
  for (const auto& v : failure.violations) fmt::print(out, "  [{}] at {} ms: {}\n", v.checker, v.at.value, v.what);
  fmt::print(out, "  reproduce: {}\n", failure.reproduce);
}

void print_summary(std::FILE* out, std::string_view title, bool check_determinism, const SwarmTotals& t) {
  const auto row = [out](std::string_view name, const auto& value) { fmt::print(out, "  {:<22} {:>14}\n", name, value); };
  if (check_determinism) {
    fmt::print(out, "determinism: every seed ran twice{}\n",
               t.failed_seeds > 0 ? " (see failures above)" : " with the same event hash");
  }
  fmt::print(out, "\n{}\n", title);
  row("seeds", t.seeds);
  row("failed seeds", t.failed_seeds);
  row("events", t.events);
  for (const auto& [label, value] : t.counters) row(label, value);
  row("simulated time (s)", fmt::format("{:.1f}", static_cast<double>(t.simulated_ms) / 1000));
  row("wall time (s)", fmt::format("{:.2f}", t.wall_s));
  row("events/s", fmt::format("{:.0f}", static_cast<double>(t.events) / t.wall_s));
  fmt::print(out, "violations: {}\n", t.violations);
  fmt::print(out, "speed: {:.0f}\n", static_cast<double>(t.simulated_ms) / 1000 / t.wall_s);
}

SwarmTotals run_swarm(const SwarmConfig& config, const SwarmMode& mode) {
  LOCKSTEP_ASSERT(config.first_seed <= config.last_seed && config.wall_seconds && mode.run && mode.reproduce);
  SwarmTotals totals;
  const ProgressBar bar(config.out, config.progress, config.last_seed - config.first_seed + 1);
  const double start_s = config.wall_seconds();
  for (std::uint64_t seed = config.first_seed;; ++seed) {
    const std::uint64_t done = seed - config.first_seed;
    const auto progress = [&](double share) { bar.show(done, share, totals.failed_seeds); };
    auto outcome = mode.run(seed, progress);
    if (config.check_determinism) {
      const auto again = mode.run(seed, [](double) {});
      if (again.event_hash != outcome.event_hash || again.events != outcome.events) {
        ++outcome.violation_count;
        outcome.violations.push_back(
            {outcome.simulated_until, "determinism",
             fmt::format("two runs of seed {} differ: event hash {:016x} over {} events, then {:016x} over {}", seed,
                         outcome.event_hash, outcome.events, again.event_hash, again.events),
             {}});
      }
    }
    ++totals.seeds;
    totals.events += outcome.events;
    totals.simulated_ms += static_cast<std::uint64_t>(outcome.simulated_until.value);
    add_rows(totals.counters, outcome.counters);
    if (outcome.violation_count > 0) {
      bar.clear();
      ++totals.failed_seeds;
      totals.violations += outcome.violation_count;
      FailedSeed failure{seed, outcome.violation_count, outcome.params, {}, mode.reproduce(seed)};
      const auto reported = std::min(outcome.violations.size(), reported_violations_max);
      failure.violations.assign(outcome.violations.begin(), outcome.violations.begin() + static_cast<std::ptrdiff_t>(reported));
      print_failure(config.out, failure);
      if (totals.failures.size() < SwarmTotals::failures_kept_max) {
        totals.failures.push_back(std::move(failure));
      } else {
        ++totals.failures_not_kept;
      }
      if (mode.after_failure) mode.after_failure(seed, outcome, totals.failed_seeds == 1);
    }
    bar.show(done + 1, 0, totals.failed_seeds);
    if (seed == config.last_seed) break;  // not `seed <= last`: last may be the largest seed
  }
  bar.clear();
  totals.wall_s = std::max(1e-9, config.wall_seconds() - start_s);
  print_summary(config.out, mode.summary_title, config.check_determinism, totals);
  return totals;
}

}  // namespace lockstep::sim
