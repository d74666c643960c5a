// Small histories for holding the checker to the reference
// (history_reference_test.cpp): runs of the models with random delays, as a
// correct server or cluster would give them, on a grid of a few tens of
// milliseconds, within the size the reference reads (at most 4 connections,
// 2 keys, 12 requests); then, often, one answer changed, moved, dropped or heard twice.
// A run left unmutated conforms by the rules of docs/protocol.md, so the
// property also checks that neither reading raises a false alarm on it.
#pragma once

#include <cstdint>
#include <vector>

#include <rapidcheck.h>

#include "check/history.hpp"

namespace lockstep::testing {

// One thing a generated run does; the fields a kind does not use are ignored.
struct RunStep {
  int kind = 0;  // see simple_run and cluster_run
  int conn = 0, key = 0, owner = 0;
  int lease_ms = 5, wait_ms = 0;
  int delay_ms = 0;  // how long the server (or leader) takes to act on it
  int read_us = 0;   // how long its answer takes to be read
  int gap_us = 0;    // time before the step
  int pick = 0;      // which token, which variant
};

// Steps drawn from full ranges (RapidCheck scales ranges by its size
// parameter; the runs want every connection, key and owner from the start):
// at most `count_max`, leases of 1 to `lease_max` ms, waits of at most
// `wait_max` ms, gaps of at most `gap_max_us`.
struct StepRanges {
  int count_max = 10;
  int lease_max = 12;
  int wait_max = 9;
  int gap_max_us = 3000;
};
rc::Gen<std::vector<RunStep>> gen_steps(const StepRanges& ranges);

struct SimpleSetting {
  std::int64_t tolerance_ms = 1;
  std::int64_t sweep_ms = 1000;
  std::uint64_t first_token = 1;
  bool handled_within = false;  // the header states handled_within_ms
};
rc::Gen<SimpleSetting> gen_simple_setting();

// A run of the simple model (model/model.hpp) as one server gives it: each
// request handled at an instant at or after its send (in its connection's
// order, at most 2 ms late), answers read within half the tolerance of
// being produced, closes by the tester, malformed lines.
history::History simple_run(const std::vector<RunStep>& steps, const SimpleSetting& setting);

struct ClusterSetting {
  std::int64_t tolerance_ms = 1;
  std::int64_t allowance_ms = 0;
  std::int64_t max_lateness_ms = -1;
  // Each client acquires under one owner name, its own, as the fuzzer's
  // clients do (otherwise each request has an owner of its own): then
  // several operations of a connection answer to one owner, and an answer
  // may be either's.
  bool owner_per_client = false;
  bool trylocks_only = false;  // every acquire asks a wait of 0
};
rc::Gen<ClusterSetting> gen_cluster_setting(bool trylocks_only = false);

// A run of the cluster's model (model/cluster_model.hpp): three clients with
// sessions, retries on new connections, closes by the tester and by a node,
// `E not-leader` answers, stamps up to the clock allowance after the
// arrival, Expires and Timeouts sometimes applied late.
history::History cluster_run(const std::vector<RunStep>& steps, const ClusterSetting& setting);

// One answer changed, moved, dropped or heard twice (or none).
struct Mutation {
  int kind = 0;  // 0 none, 1 change, 2 move, 3 drop, 4 heard again later
  int which = 0;
  int amount_us = 0;
};
rc::Gen<Mutation> gen_mutation();
void mutate(history::History& h, const Mutation& m);

}  // namespace lockstep::testing
