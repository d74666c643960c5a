// The nemesis's plan (live/nemesis.hpp) for `fuzz --mode cluster`: the same
// seed gives the same plan and another seed another; one fault per period,
// from the end of the first period, each on a process that exists and of a
// kind asked for; every kill and pause healed half a period later (by the
// run's end at the latest) on the same process, so at most one process is
// down or paused at a time and nothing is broken at the end; etcd members
// only when asked; and the fault list parsed as the command line gives it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "live/nemesis.hpp"

namespace lockstep::live {
namespace {

NemesisPlanOptions options(std::uint64_t seed, int etcd_members = 0, bool links = false, bool clocks = false) {
  NemesisPlanOptions o;
  o.faults = {NemesisFault::kill, NemesisFault::pause, NemesisFault::restart};
  if (links) o.faults = {NemesisFault::partition_node, NemesisFault::partition_clients, NemesisFault::slow_etcd};
  if (clocks) o.faults.push_back(NemesisFault::clock_jump), o.clock_jump_max_ms = 50;
  o.every_s = 5;
  o.nodes = 3;
  o.etcd_members = etcd_members;
  o.duration_s = 60;
  o.seed = seed;
  return o;
}

TEST(NemesisPlan, SameSeedSamePlanAnotherSeedAnother) {
  const auto a = nemesis_plan(options(7)), b = nemesis_plan(options(7)), c = nemesis_plan(options(8));
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].what() + std::to_string(a[i].at_us), b[i].what() + std::to_string(b[i].at_us));
  std::string plan_a, plan_c;
  for (const auto& step : a) plan_a += step.what() + ";";
  for (const auto& step : c) plan_c += step.what() + ";";
  EXPECT_NE(plan_a, plan_c);
}

TEST(NemesisPlan, OneFaultPerPeriodEachHealedWithinIt) {
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    const auto o = options(seed, seed % 2 == 0 ? 3 : 0, seed > 50, seed % 3 == 0);
    const auto plan = nemesis_plan(o);
    std::map<std::pair<bool, int>, NemesisStep::Kind> broken;  // process -> what was done to it
    int faults = 0;
    std::int64_t last_us = 0;
    for (const auto& step : plan) {
      EXPECT_GE(step.at_us, last_us) << "seed " << seed << ": not in time order";
      last_us = step.at_us;
      EXPECT_LT(step.at_us, 60'000'001) << step.what();
      EXPECT_GE(step.index, 0);
      EXPECT_LT(step.index, step.etcd ? o.etcd_members : o.nodes) << step.what();
      const auto process = std::pair{step.etcd, step.index};
      switch (step.kind) {
        case NemesisStep::Kind::kill:
        case NemesisStep::Kind::pause:
        case NemesisStep::Kind::cut_etcd:
        case NemesisStep::Kind::cut_clients:
        case NemesisStep::Kind::slow_etcd:
        case NemesisStep::Kind::cut_peers:
        case NemesisStep::Kind::jump_clock:
          EXPECT_TRUE(broken.empty()) << "seed " << seed << ": " << step.what() << " while another fault is open";
          EXPECT_EQ(step.at_us % 5'000'000, 0) << step.what();
          broken[process] = step.kind;
          ++faults;
          break;
        case NemesisStep::Kind::start:
        case NemesisStep::Kind::resume:
        case NemesisStep::Kind::heal_etcd:
        case NemesisStep::Kind::heal_clients:
        case NemesisStep::Kind::heal_slow:
        case NemesisStep::Kind::heal_peers:
        case NemesisStep::Kind::unjump_clock: {
          ASSERT_GE(step.heals, 0) << step.what();
          EXPECT_LT(step.heals, &step - plan.data());
          EXPECT_EQ(plan[static_cast<std::size_t>(step.heals)].index, step.index) << step.what();
          EXPECT_FALSE(step.leader);
          const auto opened = broken.find(process);
          ASSERT_NE(opened, broken.end()) << "seed " << seed << ": " << step.what() << " heals nothing";
          EXPECT_EQ(plan[static_cast<std::size_t>(step.heals)].kind, opened->second);
          EXPECT_EQ(plan[static_cast<std::size_t>(step.heals)].fault(), step.fault()) << step.what();
          EXPECT_EQ(step.at_us % 5'000'000, 2'500'000) << step.what();
          broken.erase(opened);
          break;
        }
        case NemesisStep::Kind::restart:
          EXPECT_TRUE(broken.empty()) << step.what();
          EXPECT_EQ(step.at_us % 5'000'000, 0) << step.what();
          ++faults;
          break;
      }
    }
    EXPECT_TRUE(broken.empty()) << "seed " << seed << ": a fault left open at the end";
    EXPECT_EQ(faults, 11) << "seed " << seed << ": one fault at 5, 10 ... 55 s";
  }
}

// Link faults act on nodes' links only: never on an etcd member, slow-etcd
// on every node's at once (so never aimed at the leader), the partitions at
// the leader about half the time; a plan of process faults is the one it
// was before link faults existed (the seed 3 plan, as it was then).
TEST(NemesisPlan, LinkFaultsActOnNodesAndLeaveProcessPlansAlone) {
  int at_leader = 0, partitions = 0;
  std::map<std::string, int> kinds;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    for (const auto& step : nemesis_plan(options(seed, 3, true))) {
      EXPECT_FALSE(step.etcd) << step.what();
      EXPECT_TRUE(is_link_fault(step.fault())) << step.what();
      if (step.heals >= 0) continue;
      ++kinds[nemesis_fault_name(step.fault())];
      if (step.kind == NemesisStep::Kind::slow_etcd) {
        EXPECT_FALSE(step.leader);
        EXPECT_EQ(step.what(), "slow etcd links");
      } else {
        ++partitions;
        at_leader += step.leader ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(kinds.size(), 3u);
  EXPECT_GT(at_leader, partitions / 4);
  EXPECT_LT(at_leader, partitions * 3 / 4);
  std::string plan;
  for (const auto& step : nemesis_plan(options(3, 3))) plan += step.what() + (step.leader ? "*" : "") + ";";
  EXPECT_EQ(plan,
            "pause n2;resume n2;restart etcd1;pause n2;resume n2;pause etcd2;resume etcd2;kill n1;start n1;restart "
            "n3*;pause etcd1;resume etcd1;pause etcd2;resume etcd2;kill etcd1;start etcd1;restart etcd3;pause "
            "n3*;resume n3;");
}

// A clock jump acts on a node (never an etcd member: the fuzzer does not
// fake their clocks), steps it by at most its bound either way, and is
// stepped back by its heal on the same node.
TEST(NemesisPlan, ClockJumpsStayWithinTheirBoundOnNodes) {
  int forward = 0, back = 0, jumps = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto o = options(seed, 3, false, true);
    o.faults = {NemesisFault::clock_jump};
    for (const auto& step : nemesis_plan(o)) {
      EXPECT_FALSE(step.etcd) << step.what();
      EXPECT_TRUE(is_clock_fault(step.fault())) << step.what();
      if (step.heals >= 0) {
        EXPECT_EQ(step.kind, NemesisStep::Kind::unjump_clock) << step.what();
        continue;
      }
      ++jumps;
      EXPECT_LE(std::abs(step.jump_ms), 50) << step.what();
      forward += step.jump_ms > 0 ? 1 : 0;
      back += step.jump_ms < 0 ? 1 : 0;
    }
  }
  EXPECT_EQ(jumps, 20 * 11);
  EXPECT_GT(forward, jumps / 4);
  EXPECT_GT(back, jumps / 4);
}

// etcd-minority acts on an etcd member, one of those there are, whether or
// not the process faults may act on etcd (--nemesis-etcd), and its heal on
// the same member.
TEST(NemesisPlan, EtcdMinorityCutsOneMemberAndHealsTheSame) {
  std::set<int> members;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto o = options(seed);
    o.faults = {NemesisFault::etcd_minority};
    o.store_members = 3;
    const auto plan = nemesis_plan(o);
    EXPECT_EQ(plan.size(), 22u);
    for (const auto& step : plan) {
      EXPECT_TRUE(step.etcd) << step.what();
      EXPECT_FALSE(step.leader) << step.what();
      EXPECT_GE(step.index, 0);
      EXPECT_LT(step.index, 3) << step.what();
      if (step.heals >= 0) {
        EXPECT_EQ(step.kind, NemesisStep::Kind::heal_peers);
        EXPECT_EQ(plan[static_cast<std::size_t>(step.heals)].index, step.index);
        EXPECT_EQ(step.what(), "heal etcd" + std::to_string(step.index + 1) + " to its peers");
      } else {
        EXPECT_EQ(step.kind, NemesisStep::Kind::cut_peers);
        members.insert(step.index);
      }
    }
  }
  EXPECT_EQ(members.size(), 3u);
}

TEST(NemesisPlan, SomeFaultsAimAtTheLeaderNoneAtAnEtcdLeader) {
  int at_leader = 0, faults = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    for (const auto& step : nemesis_plan(options(seed, 3))) {
      if (step.heals >= 0) continue;
      ++faults;
      at_leader += step.leader ? 1 : 0;
      EXPECT_FALSE(step.leader && step.etcd) << step.what();
    }
  }
  EXPECT_GT(at_leader, faults / 5);
  EXPECT_LT(at_leader, faults);
}

TEST(NemesisPlan, EtcdMembersOnlyWhenAskedAndOnlyTheFaultsAsked) {
  bool etcd_seen = false;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    auto o = options(seed);
    o.faults = {NemesisFault::pause};
    for (const auto& step : nemesis_plan(o)) {
      EXPECT_FALSE(step.etcd);
      EXPECT_TRUE(step.kind == NemesisStep::Kind::pause || step.kind == NemesisStep::Kind::resume) << step.what();
    }
    for (const auto& step : nemesis_plan(options(seed, 3))) etcd_seen = etcd_seen || step.etcd;
  }
  EXPECT_TRUE(etcd_seen);
}

TEST(NemesisPlan, NoneWithoutFaultsOrBeforeTheFirstPeriodEnds) {
  auto o = options(1);
  o.faults.clear();
  EXPECT_TRUE(nemesis_plan(o).empty());
  o = options(1);
  o.duration_s = 5;  // the first fault would be at the run's end
  EXPECT_TRUE(nemesis_plan(o).empty());
}

TEST(NemesisPlan, WhatTheHistorySays) {
  NemesisStep step;
  step.kind = NemesisStep::Kind::kill;
  step.index = 1;
  EXPECT_EQ(step.what(), "kill n2");
  step.kind = NemesisStep::Kind::resume;
  step.etcd = true;
  step.index = 0;
  EXPECT_EQ(step.what(), "resume etcd1");
}

TEST(NemesisFaults, ParsedAsGiven) {
  std::string error;
  const auto all = parse_nemesis_faults("kill,pause,restart", error);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 3u);
  const auto one = parse_nemesis_faults("pause", error);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->front(), NemesisFault::pause);
  // `all`: every fault the nemesis knows, which is what the soak runs.
  const auto every = parse_nemesis_faults("all", error);
  ASSERT_TRUE(every);
  EXPECT_EQ(*every, nemesis_faults_known());
  EXPECT_EQ(every->size(), 8u);
  const auto links = parse_nemesis_faults("slow-etcd,partition-node,partition-clients", error);
  ASSERT_TRUE(links);
  EXPECT_EQ(*links, (std::vector<NemesisFault>{NemesisFault::slow_etcd, NemesisFault::partition_node,
                                                NemesisFault::partition_clients}));
  for (const char* bad : {"", "kill,", ",kill", "kill,kill", "boom", "kill pause", "all,kill"}) {
    error.clear();
    EXPECT_FALSE(parse_nemesis_faults(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

}  // namespace
}  // namespace lockstep::live
