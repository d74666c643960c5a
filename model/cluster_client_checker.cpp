#include "model/cluster_client_checker.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace lockstep {

namespace {

constexpr std::int64_t us_per_ms = 1'000;

class Report {
 public:
  Report(ClusterCheckReport& report, std::size_t report_max) : report_(report), report_max_(report_max) {}
  void add(std::string message) {
    ++report_.violations;
    if (report_.messages.size() < report_max_) report_.messages.push_back(std::move(message));
  }

 private:
  ClusterCheckReport& report_;
  std::size_t report_max_;
};

std::string who(const ClusterOperation& op) {
  return fmt::format("{}#{} (`{}` sent at {} us{})", op.client, op.sequence,
                     op.acquire ? fmt::format("A {} {} {} {}", op.key, op.owner, op.lease_ms.value, op.wait_ms.value)
                                : fmt::format("R {} {}", op.key, op.token.value),
                     op.sent_us,
                     op.answered_us ? fmt::format(", answered `{}` at {} us", format_response(*op.response),
                                                  *op.answered_us)
                                    : ", never answered");
}

bool granted(const ClusterOperation& op) {
  return op.acquire && op.answered_us && op.response->kind == ResponseKind::granted;
}

// Tokens are unique, and a grant answered before another acquire was sent
// has the smaller token.
void check_tokens(const std::vector<const ClusterOperation*>& grants, Report& report) {
  std::map<std::uint64_t, const ClusterOperation*> by_token;
  for (const auto* g : grants) {
    const auto [found, fresh] = by_token.emplace(g->response->token.value, g);
    if (!fresh) report.add(fmt::format("token {} granted twice: {} and {}", g->response->token.value, who(*found->second), who(*g)));
  }
  auto by_answer = grants;
  std::sort(by_answer.begin(), by_answer.end(),
            [](const auto* a, const auto* b) { return *a->answered_us < *b->answered_us; });
  auto by_send = grants;
  std::sort(by_send.begin(), by_send.end(), [](const auto* a, const auto* b) { return a->sent_us < b->sent_us; });
  // Sweep: the largest token answered before each send.
  std::size_t next = 0;
  const ClusterOperation* largest = nullptr;
  for (const auto* later : by_send) {
    while (next < by_answer.size() && *by_answer[next]->answered_us < later->sent_us) {
      const auto* earlier = by_answer[next++];
      if (largest == nullptr || earlier->response->token > largest->response->token) largest = earlier;
    }
    if (largest != nullptr && later->response->token <= largest->response->token) {
      report.add(fmt::format("tokens went back: {} was answered before {} was sent, with a token no smaller",
                             who(*largest), who(*later)));
    }
  }
}

// Two grants of one key: the later token's holder learns of it only once
// the earlier could have ended.
void check_exclusion(const std::vector<const ClusterOperation*>& grants,
                     const std::map<std::pair<std::string, std::uint64_t>, std::int64_t>& first_release_us,
                     std::int64_t allowance_us, Report& report) {
  std::map<std::string, std::vector<const ClusterOperation*>> by_key;
  for (const auto* g : grants) by_key[g->key].push_back(g);
  for (auto& [key, list] : by_key) {
    std::sort(list.begin(), list.end(),
              [](const auto* a, const auto* b) { return a->response->token < b->response->token; });
    const ClusterOperation* longest = nullptr;  // of the smaller tokens, the one that ends last
    std::int64_t longest_end_us = std::numeric_limits<std::int64_t>::min();
    for (const auto* g : list) {
      if (longest != nullptr && *g->answered_us + allowance_us < longest_end_us) {
        report.add(fmt::format("two holders of `{}`: {} still held it until {} us, and {} learned of its grant at {} us",
                               key, who(*longest), longest_end_us, who(*g), *g->answered_us));
      }
      std::int64_t end_us = g->sent_us + g->lease_ms.value * us_per_ms;
      const auto released = first_release_us.find({key, g->response->token.value});
      if (released != first_release_us.end()) end_us = std::min(end_us, released->second);
      if (end_us > longest_end_us) {
        longest_end_us = end_us;
        longest = g;
      }
    }
  }
}

// A try-lock refused although no grant of its key can explain it.
void check_stuck_keys(std::span<const ClusterOperation> operations, std::int64_t max_lateness_us, Report& report) {
  std::map<std::string, std::vector<const ClusterOperation*>> grants, unknown;
  std::map<std::pair<std::string, std::uint64_t>, std::int64_t> released_us;  // R answered
  for (const auto& op : operations) {
    if (granted(op)) grants[op.key].push_back(&op);
    if (op.acquire && !op.answered_us) unknown[op.key].push_back(&op);
    if (!op.acquire && op.answered_us && op.response->kind == ResponseKind::released) {
      auto [found, fresh] = released_us.emplace(std::pair{op.key, op.token.value}, *op.answered_us);
      if (!fresh) found->second = std::min(found->second, *op.answered_us);
    }
  }
  for (const auto& op : operations) {
    if (!op.acquire || op.wait_ms.value != 0 || op.attempts != 1 || !op.answered_us ||
        op.response->kind != ResponseKind::timed_out) {
      continue;
    }
    const auto refused_us = *op.answered_us;
    const auto may_hold = [&](const ClusterOperation* g) {
      if (g->sent_us > refused_us) return false;  // granted after the refusal
      auto until = *g->answered_us + g->lease_ms.value * us_per_ms + max_lateness_us;
      const auto released = released_us.find({g->key, g->response->token.value});
      if (released != released_us.end()) until = std::min(until, released->second);
      return until >= op.sent_us;
    };
    const auto& candidates = grants[op.key];
    if (std::any_of(candidates.begin(), candidates.end(), may_hold)) continue;
    const auto& pending = unknown[op.key];
    if (std::any_of(pending.begin(), pending.end(), [&](const auto* u) { return u->sent_us <= refused_us; })) continue;
    report.add(fmt::format("`{}` stuck: {} was refused, but no grant of it could still hold it (every one released or "
                           "past its lease by more than {} ms)",
                           op.key, who(op), max_lateness_us / us_per_ms));
  }
}

}  // namespace

ClusterCheckReport check_cluster_history(std::span<const ClusterOperation> operations,
                                         std::span<const std::string> unexpected, const ClusterCheckOptions& options) {
  ClusterCheckReport result;
  Report report(result, options.report_max);
  const std::int64_t allowance_us = options.allowance_ms.value * us_per_ms;
  std::vector<const ClusterOperation*> grants;
  std::map<std::pair<std::string, std::uint64_t>, std::int64_t> first_release_us;
  std::map<std::pair<std::string, std::uint64_t>, const ClusterOperation*> grant_of;
  for (const auto& op : operations) {
    if (!op.answered_us) ++result.indeterminate;
    if (granted(op)) {
      grants.push_back(&op);
      grant_of[{op.key, op.response->token.value}] = &op;
    }
    if (!op.acquire) {
      ++result.releases;
      auto [found, fresh] = first_release_us.emplace(std::pair{op.key, op.token.value}, op.sent_us);
      if (!fresh) found->second = std::min(found->second, op.sent_us);
    }
    if (op.answered_us && op.response->kind == ResponseKind::error) report.add(fmt::format("an error: {}", who(op)));
  }
  result.grants = grants.size();
  check_tokens(grants, report);
  check_exclusion(grants, first_release_us, allowance_us, report);
  for (const auto& op : operations) {
    if (!op.answered_us) continue;
    // No lost grant: N for the holder's token before its lease could end.
    if (!op.acquire && op.response->kind == ResponseKind::not_held) {
      const auto grant = grant_of.find({op.key, op.token.value});
      if (grant != grant_of.end() && first_release_us.at({op.key, op.token.value}) == op.sent_us) {
        const auto& g = *grant->second;
        const auto lease_end_us = g.sent_us + g.lease_ms.value * us_per_ms;
        if (*op.answered_us + allowance_us < lease_end_us) {
          report.add(fmt::format("a grant was lost: {} was answered N at {} us, but {} could not have expired before {} us",
                                 who(op), *op.answered_us, who(g), lease_end_us));
        }
      }
    }
    // Nothing early: T for a waiting acquire before its wait could end.
    if (op.acquire && op.wait_ms.value > 0 && op.attempts == 1 && op.response->kind == ResponseKind::timed_out) {
      const auto deadline_us = op.sent_us + op.wait_ms.value * us_per_ms;
      if (*op.answered_us + allowance_us < deadline_us) {
        report.add(fmt::format("T before the wait could end: {}, whose wait ends no earlier than {} us", who(op),
                               deadline_us));
      }
    }
  }
  if (options.max_lateness_ms.value > 0) check_stuck_keys(operations, options.max_lateness_ms.value * us_per_ms, report);
  for (const auto& line : unexpected) report.add(fmt::format("a line that answers no request: `{}`", line));
  return result;
}

}  // namespace lockstep
