#include "check/mode_rules.hpp"

#include "check/cluster_frontier.hpp"
#include "check/least_lateness.hpp"

namespace lockstep::history {

namespace {

class SimpleRules final : public ModeRules {
 public:
  SimpleRules(const History& history, const Built& built)
      : every_(history.header.limits.sweep_ms.value), shared_(built.incarnation_start_us.size(), every_) {}

  KeyVerdict search(const KeyInput& input, const KeyOracles& oracles, std::uint32_t incarnation,
                    const KeyCheckOptions& options) const override {
    return check_simple_key(input, oracles, shared_[incarnation], options);
  }
  std::optional<KeyVerdict> search_unnarrowed(const KeyInput& input, const KeyOracles& oracles,
                                              std::uint32_t incarnation,
                                              const KeyCheckOptions& options) const override {
    if (shared_[incarnation] == every_) return std::nullopt;
    return check_simple_key(input, oracles, every_, options);
  }
  // Its explanations narrow the phases exactly: the keys after it are
  // searched within them.
  void explained(std::uint32_t incarnation, const KeyInput&, const KeyVerdict& verdict, CheckResult&) override {
    shared_[incarnation] = verdict.phases;
  }
  void finish(const Oracles&, std::uint64_t, std::uint64_t&, const KeyVerdicts&, CheckResult& result) override {
    result.phases = shared_;
  }

 private:
  const PhaseSet every_;
  // Per incarnation, the phases every key decided so far allows.
  std::vector<PhaseSet> shared_;
};

class ClusterRules final : public ModeRules {
 public:
  ClusterRules(const History& history, const Built& built)
      : history_(history), built_(built), every_(built.incarnation_start_us.size(), PhaseSet(history.header.limits.sweep_ms.value)) {}

  KeyVerdict search(const KeyInput& input, const KeyOracles& oracles, std::uint32_t,
                    const KeyCheckOptions& options) const override {
    return check_cluster_key(input, oracles, options);
  }
  std::optional<KeyVerdict> search_unnarrowed(const KeyInput&, const KeyOracles&, std::uint32_t,
                                              const KeyCheckOptions&) const override {
    return std::nullopt;  // no key narrows another's search
  }
  // The worst lateness among the keys' own explanations, so far.
  void explained(std::uint32_t incarnation, const KeyInput& input, const KeyVerdict& verdict,
                 CheckResult& result) override {
    if (verdict.lateness_ms <= result.lateness_ms) return;
    result.lateness_ms = verdict.lateness_ms;
    result.lateness_text = lateness_text(input, verdict, built_.incarnation_start_us[incarnation]);
    result.lateness_key = input.key;
  }
  // The least maximum lateness that explains every key at once, when each
  // has an explanation; a lower bound only when one is undecided.
  void finish(const Oracles& oracles, std::uint64_t memory_max_bytes, std::uint64_t& budget,
              const KeyVerdicts& verdicts, CheckResult& result) override {
    if (result.violations.empty() && result.unknown.empty()) {
      settle_least_lateness(LatenessSearch{history_, built_, oracles, every_, memory_max_bytes, budget}, verdicts,
                            result);
    } else if (!result.unknown.empty()) {
      result.lateness_unverified = true;
    }
  }

 private:
  const History& history_;
  const Built& built_;
  const std::vector<PhaseSet> every_;  // no sweep: nothing narrows them
};

}  // namespace

std::unique_ptr<ModeRules> ModeRules::of(const History& history, const Built& built) {
  if (history.header.mode == Mode::cluster) return std::make_unique<ClusterRules>(history, built);
  return std::make_unique<SimpleRules>(history, built);
}

}  // namespace lockstep::history
