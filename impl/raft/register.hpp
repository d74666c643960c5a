// The trivial state machine every Raft test uses (TigerBeetle's habit of
// testing the replica with a trivial machine): an append-only register. Each
// applied command is appended with its log index, so two nodes that applied
// different entries at one index differ visibly, and a snapshot is simply
// the prefix of the register through an index.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "impl/raft/state_machine.hpp"

namespace lockstep::raft {

class AppendOnlyRegister : public StateMachine {
 public:
  struct Value {
    Index index = 0;
    std::string data;
    friend bool operator==(const Value&, const Value&) = default;
  };

  void apply(const Entry& entry) override;
  std::string snapshot_through(Index index) const override;
  void restore(const Snapshot& snapshot) override;

  const std::vector<Value>& values() const { return values_; }
  Index applied() const { return applied_; }

 private:
  std::vector<Value> values_;  // commands only, in index order
  Index applied_ = 0;
};

}  // namespace lockstep::raft
