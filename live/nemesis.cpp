#include "live/nemesis.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "impl/prng.hpp"

namespace lockstep::live {

const char* nemesis_fault_name(NemesisFault fault) {
  switch (fault) {
    case NemesisFault::kill: return "kill";
    case NemesisFault::pause: return "pause";
    case NemesisFault::restart: return "restart";
    case NemesisFault::partition_node: return "partition-node";
    case NemesisFault::partition_clients: return "partition-clients";
    case NemesisFault::slow_etcd: return "slow-etcd";
    case NemesisFault::etcd_minority: return "etcd-minority";
    case NemesisFault::clock_jump: return "clock-jump";
  }
  return "?";
}

bool is_link_fault(NemesisFault fault) {
  return fault == NemesisFault::partition_node || fault == NemesisFault::partition_clients ||
         fault == NemesisFault::slow_etcd || fault == NemesisFault::etcd_minority;
}

bool is_clock_fault(NemesisFault fault) { return fault == NemesisFault::clock_jump; }

const std::vector<NemesisFault>& nemesis_faults_known() {
  static const std::vector<NemesisFault> known{NemesisFault::kill,           NemesisFault::pause,
                                               NemesisFault::restart,        NemesisFault::partition_node,
                                               NemesisFault::partition_clients, NemesisFault::slow_etcd,
                                               NemesisFault::etcd_minority,  NemesisFault::clock_jump};
  return known;
}

std::optional<std::vector<NemesisFault>> parse_nemesis_faults(std::string_view text, std::string& error) {
  if (text == "all") return nemesis_faults_known();
  std::vector<NemesisFault> faults;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const auto end = std::min(text.find(',', begin), text.size());
    const auto word = text.substr(begin, end - begin);
    std::optional<NemesisFault> fault;
    std::string names;
    for (const auto candidate : nemesis_faults_known()) {
      if (word == nemesis_fault_name(candidate)) fault = candidate;
      names += fmt::format("{}{}", names.empty() ? "" : ", ", nemesis_fault_name(candidate));
    }
    if (!fault) {
      error = fmt::format("'{}' is not a fault: {} (comma-separated), or all", word, names);
      return std::nullopt;
    }
    if (std::find(faults.begin(), faults.end(), *fault) != faults.end()) {
      error = fmt::format("'{}' is given twice", word);
      return std::nullopt;
    }
    faults.push_back(*fault);
    begin = end + 1;
  }
  return faults;
}

NemesisFault NemesisStep::fault() const {
  switch (kind) {
    case Kind::kill:
    case Kind::start: return NemesisFault::kill;
    case Kind::pause:
    case Kind::resume: return NemesisFault::pause;
    case Kind::restart: return NemesisFault::restart;
    case Kind::cut_etcd:
    case Kind::heal_etcd: return NemesisFault::partition_node;
    case Kind::cut_clients:
    case Kind::heal_clients: return NemesisFault::partition_clients;
    case Kind::slow_etcd:
    case Kind::heal_slow: return NemesisFault::slow_etcd;
    case Kind::cut_peers:
    case Kind::heal_peers: return NemesisFault::etcd_minority;
    case Kind::jump_clock:
    case Kind::unjump_clock: return NemesisFault::clock_jump;
  }
  return NemesisFault::kill;
}

std::string NemesisStep::what() const {
  const char* verb = "kill";
  switch (kind) {
    case Kind::cut_etcd: return fmt::format("cut n{} from etcd", index + 1);
    case Kind::heal_etcd: return fmt::format("heal n{} from etcd", index + 1);
    case Kind::cut_clients: return fmt::format("cut n{} from its clients", index + 1);
    case Kind::heal_clients: return fmt::format("heal n{} from its clients", index + 1);
    case Kind::slow_etcd: return "slow etcd links";
    case Kind::heal_slow: return "heal etcd links";
    case Kind::cut_peers: return fmt::format("cut etcd{} from its peers", index + 1);
    case Kind::heal_peers: return fmt::format("heal etcd{} to its peers", index + 1);
    case Kind::jump_clock: return fmt::format("jump n{}'s clock by {:+} ms", index + 1, jump_ms);
    case Kind::unjump_clock: return fmt::format("jump n{}'s clock back", index + 1);
    case Kind::kill: verb = "kill"; break;
    case Kind::start: verb = "start"; break;
    case Kind::pause: verb = "pause"; break;
    case Kind::resume: verb = "resume"; break;
    case Kind::restart: verb = "restart"; break;
  }
  return etcd ? fmt::format("{} etcd{}", verb, index + 1) : fmt::format("{} n{}", verb, index + 1);
}

std::vector<NemesisStep> nemesis_plan(const NemesisPlanOptions& options) {
  std::vector<NemesisStep> steps;
  if (options.faults.empty() || options.every_s <= 0 || options.nodes <= 0) return steps;
  // A stream of its own: the workload's draws do not move the plan.
  Prng rng = Prng(options.seed).fork(0x6e656d65);
  const auto period_us = static_cast<std::int64_t>(options.every_s * 1e6);
  const auto end_us = static_cast<std::int64_t>(options.duration_s * 1e6);
  const int targets = options.nodes + std::max(0, options.etcd_members);
  for (std::int64_t at = period_us; at < end_us; at += period_us) {
    const auto fault = options.faults[rng.below(options.faults.size())];
    const auto pick = static_cast<int>(rng.below(static_cast<std::uint64_t>(targets)));
    NemesisStep step;
    step.at_us = at;
    // A link fault acts on a node's links (slow-etcd on every node's), never
    // on an etcd member; the draws are the same, so a plan of process faults
    // stays what it was.
    step.etcd = pick >= options.nodes && !is_link_fault(fault) && !is_clock_fault(fault);
    step.index = step.etcd ? pick - options.nodes : pick % options.nodes;
    step.leader = !step.etcd && rng.chance(0.5);
    if (fault == NemesisFault::slow_etcd) step.index = 0, step.leader = false;  // every node's links
    // An etcd member, whichever the pick was (drawn again only for this
    // fault, so other plans stay what they were).
    if (fault == NemesisFault::etcd_minority) {
      step.etcd = true;
      step.leader = false;
      step.index = static_cast<int>(rng.below(static_cast<std::uint64_t>(std::max(1, options.store_members))));
    }
    const int fault_at = static_cast<int>(steps.size());
    // Healed half a period later, and by the run's end at the latest.
    const auto heal_at = std::min(at + period_us / 2, end_us);
    // A kill is healed by a start, a pause by a resume; a restart heals itself.
    const auto fault_and_heal = [&]() -> std::pair<NemesisStep::Kind, std::optional<NemesisStep::Kind>> {
      switch (fault) {
        case NemesisFault::kill: return {NemesisStep::Kind::kill, NemesisStep::Kind::start};
        case NemesisFault::pause: return {NemesisStep::Kind::pause, NemesisStep::Kind::resume};
        case NemesisFault::partition_node: return {NemesisStep::Kind::cut_etcd, NemesisStep::Kind::heal_etcd};
        case NemesisFault::partition_clients: return {NemesisStep::Kind::cut_clients, NemesisStep::Kind::heal_clients};
        case NemesisFault::slow_etcd: return {NemesisStep::Kind::slow_etcd, NemesisStep::Kind::heal_slow};
        case NemesisFault::etcd_minority: return {NemesisStep::Kind::cut_peers, NemesisStep::Kind::heal_peers};
        case NemesisFault::clock_jump: return {NemesisStep::Kind::jump_clock, NemesisStep::Kind::unjump_clock};
        case NemesisFault::restart: break;
      }
      return {NemesisStep::Kind::restart, std::nullopt};
    }();
    step.kind = fault_and_heal.first;
    // Drawn only for a clock-jump, so a plan without one stays what it was.
    if (fault == NemesisFault::clock_jump) {
      step.jump_ms = rng.between(-options.clock_jump_max_ms, options.clock_jump_max_ms);
    }
    steps.push_back(step);
    if (fault_and_heal.second) {
      step.kind = *fault_and_heal.second;
      step.at_us = heal_at;
      step.leader = false;
      step.heals = fault_at;
      steps.push_back(step);
    }
  }
  // Built in time order already (a heal comes before the next fault), so
  // `heals` indices hold.
  return steps;
}

}  // namespace lockstep::live
