#include "check/least_lateness.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace lockstep::history {

namespace {

using Where = std::pair<std::uint32_t, std::string>;

constexpr std::int64_t maximum_max = 86'400'000;  // the largest --max-lateness-ms

// Whether the history, or a key, is explained under a maximum lateness:
// yes, no, or nothing (a search undecided, or no budget left).
using Probe = std::function<std::optional<bool>(std::int64_t maximum)>;

// The least maximum of [low, maximum_max] that passes, knowing that low - 1
// does not: tried at `high` (doubled until it passes), then bisected down.
// Nothing when a probe gives nothing or no maximum passes. The last probe
// that passed was at the maximum returned.
std::optional<std::int64_t> least_passing(std::int64_t low, std::int64_t high, const Probe& passes) {
  high = std::clamp(high, low, maximum_max);
  auto answer = passes(high);
  while (answer && !*answer && high < maximum_max) {
    low = high + 1;
    high = std::min(maximum_max, high * 2);
    answer = passes(high);
  }
  if (!answer || !*answer) return std::nullopt;
  while (low < high) {
    const auto middle = low + (high - low) / 2;
    const auto at_middle = passes(middle);
    if (!at_middle) return std::nullopt;
    if (*at_middle) {
      high = middle;
    } else {
      low = middle + 1;
    }
  }
  return high;
}

class Settler {
 public:
  Settler(const LatenessSearch& search, const KeyVerdicts& verdicts, CheckResult& result)
      : search_(search), verdicts_(verdicts), result_(result) {}

  void run() {
    if (!each_key() || !tokens()) {
      // Unverified: the most of what was verified and what was counted.
      result_.lateness_unverified = true;
      if (worst_ < result_.lateness_ms) return;
    }
    result_.lateness_ms = worst_;
    result_.lateness_text = worst_text_;
    result_.lateness_key = worst_key_;
  }

 private:
  // Step 1: every key, the largest figure found first, under the figure so
  // far or its own, whichever is larger. A key's figure is the least
  // lateness its search found along its explanations, one late step at a
  // time: the key needs at least that, as a rule; but the search leaves out
  // a reading another stands for (cluster_frontier_internal.hpp, finished), whose
  // lateness may be less, so a key that passes at its figure is tried a
  // millisecond below too, and searched down from there if it passes.
  bool each_key() {
    std::vector<std::pair<std::int64_t, Where>> order;
    for (const auto& [where, verdict] : verdicts_) order.push_back({verdict.lateness_ms, where});
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [at_least, where] : order) {
      const KeyInput& input = search_.built.keys.at(where);
      const auto floor = std::max(worst_, at_least);
      auto at_floor = key_under(where, floor);
      if (!at_floor) return false;
      if (at_floor->outcome == KeyOutcome::explained) {
        if (floor == worst_) {
          bounded_.insert_or_assign(where, std::move(*at_floor));
          continue;
        }
        auto below = key_under(where, floor - 1);
        if (!below) return false;
        if (below->outcome != KeyOutcome::explained) {
          worst_ = floor;
          worst_text_ = lateness_text(input, verdicts_.at(where), origin(where));
          worst_key_ = input.key;
          bounded_.insert_or_assign(where, std::move(*at_floor));
          continue;
        }
        // Less than its figure: the least of [worst_, floor - 1].
        auto at_worst = key_under(where, worst_);
        if (!at_worst) return false;
        if (at_worst->outcome == KeyOutcome::explained) {
          bounded_.insert_or_assign(where, std::move(*at_worst));
          continue;
        }
        std::optional<KeyVerdict> last;
        KeyFailure failed = at_worst->failure;
        const auto least = least_explained(where, worst_ + 1, floor - 1, worst_, failed, last);
        if (!least) return false;
        worst_ = *least;
        worst_text_ = failed_text(input, failed, worst_ - 1, origin(where));
        worst_key_ = input.key;
        bounded_.insert_or_assign(where, std::move(*last));
        continue;
      }
      std::optional<KeyVerdict> last;
      KeyFailure failed = at_floor->failure;
      const auto least = least_explained(where, floor + 1, start_from(at_least), floor, failed, last);
      if (!least) return false;
      worst_ = *least;
      worst_text_ = last->lateness_ms == worst_ ? lateness_text(input, *last, origin(where))
                                                : failed_text(input, failed, worst_ - 1, origin(where));
      worst_key_ = input.key;
      bounded_.insert_or_assign(where, std::move(*last));
    }
    return true;
  }

  // The least maximum in [low, high] under which the key is explained
  // (least_passing), with the explanation found there (`last`), and in
  // `failed` the failure under the largest maximum that failed, from
  // `failed_at` on (what the report says was late). nullopt: a search was
  // undecided.
  std::optional<std::int64_t> least_explained(const Where& where, std::int64_t low, std::int64_t high,
                                              std::int64_t failed_at, KeyFailure& failed,
                                              std::optional<KeyVerdict>& last) {
    return least_passing(low, high, [&](std::int64_t maximum) -> std::optional<bool> {
      auto verdict = key_under(where, maximum);
      if (!verdict) return std::nullopt;
      if (verdict->outcome != KeyOutcome::explained) {
        if (maximum >= failed_at) {
          failed_at = maximum;
          failed = verdict->failure;
        }
        return false;
      }
      last = std::move(verdict);
      return true;
    });
  }

  // What a key's search under `maximum` found too late, in words.
  static std::string failed_text(const KeyInput& input, const KeyFailure& failure, std::int64_t maximum,
                                 std::int64_t origin_us) {
    if (failure.kind != KeyFailure::Kind::late || failure.request < 0) {
      return fmt::format("key `{}`: under a maximum of {} ms it has no explanation", input.key, maximum);
    }
    KeyVerdict named;
    named.late_request = failure.request;
    named.late_what = failure.cause == KeyFailure::Cause::expire     ? 'e'
                      : failure.cause == KeyFailure::Cause::deadline ? 't'
                                                                     : 'a';
    named.late_at_ms = failure.at_ms;
    return lateness_text(input, named, origin_us) + fmt::format(" (under a maximum of {} ms it has no explanation)", maximum);
  }

  // Step 2: the order of tokens across keys, under the figure.
  bool tokens() {
    if (tokens_in_order(search_.built, bounded_)) return true;
    KeyVerdicts passed;
    const Probe whole = [&](std::int64_t maximum) -> std::optional<bool> {
      KeyVerdicts under;
      for (const auto& [where, ignored] : verdicts_) {
        auto verdict = key_under(where, maximum);
        if (!verdict) return std::nullopt;
        if (verdict->outcome != KeyOutcome::explained) return false;
        under.emplace(where, std::move(*verdict));
      }
      if (!tokens_in_order(search_.built, under)) return false;
      passed = std::move(under);
      return true;
    };
    const auto at_worst = whole(worst_);
    if (!at_worst) return false;
    if (*at_worst) return true;
    const auto least = least_passing(worst_ + 1, start_from(result_.lateness_ms), whole);
    if (!least) return false;
    worst_ = *least;
    worst_text_ = fmt::format("the order of tokens across keys: under a maximum of {} ms the keys' explanations issue "
                              "a larger token before a smaller one",
                              worst_ - 1);
    worst_key_.clear();
    for (const auto& [where, verdict] : passed) {
      if (verdict.lateness_ms == worst_) {
        worst_text_ = lateness_text(search_.built.keys.at(where), verdict, origin(where));
        worst_key_ = search_.built.keys.at(where).key;
        break;
      }
    }
    return true;
  }

  // Where to look for a maximum that passes: the header's maximum (under
  // which the history was explained), or else the lateness counted.
  std::int64_t start_from(std::int64_t counted) const {
    return search_.history.header.max_lateness_ms >= 0 ? search_.history.header.max_lateness_ms : counted;
  }

  std::int64_t origin(const Where& where) const { return search_.built.incarnation_start_us[where.first]; }

  // One key under `maximum`; nothing when its search was undecided or no
  // budget is left.
  std::optional<KeyVerdict> key_under(const Where& where, std::int64_t maximum) {
    if (search_.budget == 0) return std::nullopt;
    const KeyInput& input = search_.built.keys.at(where);
    auto [found, fresh] = inputs_.try_emplace(where);
    if (fresh) {
      found->second.input = input;
      found->second.oracles = key_oracles(search_.oracles, search_.history.header.limits, where.first, input);
    }
    found->second.input.cluster.max_lateness_ms = maximum;
    KeyCheckOptions options;
    options.work_max = search_.budget;
    options.memory_max_bytes = search_.memory_max_bytes;
    options.origin_us = origin(where);
    auto verdict = check_key(found->second.input, found->second.oracles, search_.phases[where.first], options);
    search_.budget -= std::min(search_.budget, verdict.work);
    result_.states_expanded += verdict.work;
    if (verdict.outcome == KeyOutcome::undecided) return std::nullopt;
    return verdict;
  }

  struct Bounded {
    KeyInput input;  // the key's, with the maximum being tried
    KeyOracles oracles;
  };

  const LatenessSearch& search_;
  const KeyVerdicts& verdicts_;
  CheckResult& result_;
  std::map<Where, Bounded> inputs_;
  KeyVerdicts bounded_;  // each key explained under the maximum it was verified under
  std::int64_t worst_ = 0;
  std::string worst_text_;
  std::string worst_key_;  // the key worst_text_ names, if one
};

}  // namespace

void settle_least_lateness(const LatenessSearch& search, const KeyVerdicts& verdicts, CheckResult& result) {
  Settler(search, verdicts, result).run();
}

std::string lateness_text(const KeyInput& input, const KeyVerdict& verdict, std::int64_t origin_us) {
  if (verdict.late_request < 0) {
    return fmt::format("key `{}`: it has no explanation with less lateness", input.key);
  }
  const auto request = verdict.late_request >= 0 ? std::string(input.requests[static_cast<std::size_t>(verdict.late_request)].line)
                                                 : std::string("?");
  const char* what = verdict.late_what == 'e'   ? "the Expire of the grant to"
                     : verdict.late_what == 't' ? "the Timeout of"
                                                : "an answer caused by time or by another request, to";
  return fmt::format("key `{}`: {} `{}`, at {}", input.key, what, request,
                     at_text(verdict.late_at_ms * 1000, origin_us));
}

}  // namespace lockstep::history
