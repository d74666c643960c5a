// The simple-mode server as a simulated node: one Engine (the code under
// test) driven by the simulator, with its judges at the server's edge.
//
// - Model: the reference model (model/model.hpp), always correct, receives
//   the same inputs at the same instants; after every step the two output
//   sequences must be equal, token for token and in order.
// - Protocol: model/client_checker.hpp judges the responses alone at the
//   server's edge (exact instants: FIFO hand-offs, T exactly at the deadline,
//   answered exactly once, limits).
// - The engine's own invariants, every few steps and at the end.
// - No response to a connection the server has closed.
//
// Durability, and the order of outputs it needs: after each step the node
// persists the engine's token mark *before* the step's responses are sent;
// it asserts that every token sent is covered by the persisted mark. A crash
// loses everything but the storage; a restart starts a fresh engine at
// mark + 1, so tokens stay unique and increasing across restarts.
//
// Each step handles one spec action: tick (time advances: timeouts, then
// the sweep), line (Acquire or Release), close (Close). The simulator ticks
// the node before any input at an instant where something is due, so a
// line's outputs are that request's own answer and hand-off only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "impl/assert.hpp"
#include "impl/engine.hpp"
#include "model/client_checker.hpp"
#include "model/model.hpp"
#include "sim/core/violations.hpp"
#include "sim/simple/params.hpp"
#include "sim/simple/storage.hpp"

namespace lockstep::sim {

class SimpleServerNode {
 public:
  struct Config {
    Limits limits;
    std::uint64_t token_block = 64;
    InjectedBug bug = InjectedBug::none;
    ServerFault fault = ServerFault::none;
    bool compare_with_model = true;
    bool check_protocol = true;
    std::uint32_t invariant_period_steps = 64;
  };

  SimpleServerNode(Config config, DurableStorage& storage, ViolationLog& violations);

  bool up() const { return engine_ != nullptr; }
  std::uint32_t incarnation() const { return incarnation_; }
  // (Re)starts from what storage holds.
  void start(TimeMs now);
  // The process dies: every connection and all lock state are gone.
  void crash();

  void accept(ConnectionId connection);
  bool is_open(ConnectionId connection) const;

  void tick(TimeMs now, Outputs& out);
  void line(ConnectionId connection, std::string_view line, TimeMs now, Outputs& out);
  void close(ConnectionId connection, TimeMs now, Outputs& out);
  std::optional<TimeMs> next_due() const;

  void check_invariants() const;
  // The running engine; only while the server is up.
  const Engine& engine() const {
    LOCKSTEP_ASSERT(up());
    return *engine_;
  }
  // Counters summed over every incarnation so far.
  EngineCounters totals() const;
  std::uint64_t steps() const { return steps_; }

 private:
  // `input` describes the step, for a violation's message only: it is
  // written when one is found, not on every step.
  void judge_step(TimeMs now, const std::function<std::string()>& input, const Outputs& out,
                  std::size_t first, const Outputs& model_out);
  void persist_before_send(TimeMs now, const Outputs& out, std::size_t first);
  void collect_protocol_violations();

  Config config_;
  DurableStorage& storage_;
  ViolationLog& violations_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Model> model_;
  // When the model has something due, without asking Model::next_due (a
  // scan of its whole state): the deadlines of requests it queued, and the
  // next sweep instant while it has keys. Stale deadlines only cost a tick
  // that finds nothing to do.
  std::priority_queue<TimeMs, std::vector<TimeMs>, std::greater<TimeMs>> model_deadlines_;
  std::unique_ptr<ClientChecker> protocol_;
  std::size_t protocol_seen_ = 0;
  std::vector<std::uint8_t> open_;  // by connection id; ids are dense and never reused
  std::uint32_t incarnation_ = 0;
  std::uint64_t steps_ = 0;
  EngineCounters earlier_;  // of incarnations that crashed
};

}  // namespace lockstep::sim
