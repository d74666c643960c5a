// The explorer's view of one state, and the properties it checks on states
// and steps. The view is spec/LockServer.tla's state, variable for variable:
// the model's keys without what does not decide the future (granted_at), its
// waiters in global queueing order (queued_order values forgotten, their
// order kept), the driver's open connections, and what the last step sent.
// Two model states with one view behave alike, so counting views counts what
// TLC counts. The checks are the spec's invariants and step properties
// written again over this view, so that a reader can hold one beside the other.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/protocol.hpp"
#include "model/explorer_config.hpp"
#include "model/model.hpp"

namespace lockstep {

inline constexpr std::uint8_t no_owner = 0xff;  // the spec's NoOwner: R and N name none

struct StateView {
  struct Entry {  // keys[k]
    std::uint8_t key = 0;
    std::uint8_t holder = 0;
    std::uint64_t token = 0;
    std::int64_t expiry_ms = 0;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  struct Waiting {  // an element of waiters
    std::uint8_t key = 0;
    std::uint8_t owner = 0;
    std::int64_t lease_ms = 0;
    std::int64_t deadline_ms = 0;
    std::uint8_t conn = 0;
    friend bool operator==(const Waiting&, const Waiting&) = default;
  };
  struct Sent {  // an element of sent
    char kind = 'E';
    std::uint8_t conn = 0;
    std::uint8_t owner = no_owner;
    std::uint8_t key = 0;
    std::uint64_t token = 0;
  };

  std::int64_t clock_ms = 0;
  std::uint64_t next_token = 1;
  // The model does not store it: it derives the next sweep from the clock
  // (Model::next_due), as the spec's TypeOK says nextSweep must be.
  std::int64_t next_sweep_ms = 0;
  std::vector<Entry> keys;       // ascending key index
  std::vector<Waiting> waiters;  // queueing order
  std::uint32_t open = 0;        // bit c: connection c is open
  std::vector<Sent> sent;

  bool is_open(std::uint8_t conn) const { return (open >> conn & 1u) != 0; }
  // The model's part of the state (not `open`, not `sent`) is the same.
  bool same_model_as(const StateView& other) const {
    return clock_ms == other.clock_ms && next_token == other.next_token && keys == other.keys &&
           waiters == other.waiters;
  }
  const Entry* find(std::uint8_t key) const;
  std::size_t queue_length(std::uint8_t key) const;
};

// The names of the bounds as small indices, and back. The explorer asks for
// every key and owner of every state it generates, so each name is kept as
// its length and first eight bytes too: most names are told apart by those
// alone, without a call to compare strings.
class NameTable {
 public:
  explicit NameTable(const SpecBounds& bounds);
  std::uint8_t key(const std::string& name) const { return index_in(keys_, name); }
  std::uint8_t owner(const std::string& name) const { return index_in(owners_, name); }
  const SpecBounds& bounds() const { return bounds_; }

 private:
  struct Name {
    std::size_t size = 0;
    std::uint64_t prefix = 0;  // the first eight bytes, zero-padded
    const std::string* text = nullptr;
  };
  static Name name_of(const std::string& text);
  static std::vector<Name> names_of(const std::vector<std::string>& texts);
  static std::uint8_t index_in(const std::vector<Name>& names, const std::string& name);
  // Out of line, so that the lookup itself stays small.
  [[noreturn]] [[gnu::noinline]] static void unknown_name(const std::string& text);
  const SpecBounds& bounds_;
  std::vector<Name> keys_;
  std::vector<Name> owners_;
};

// Connection index c is the model's ConnectionId c + 1.
inline ConnectionId connection_of(std::uint8_t conn) { return ConnectionId{conn + 1u}; }

// Fills `view` (reusing its storage) from a model, the open connections and
// the outputs of the step that reached it.
void view_of(const Model& model, std::uint32_t open, const Outputs& sent, const NameTable& names,
             StateView& view);

// The view as bytes: equal bytes if and only if equal views. Throws
// std::logic_error on a value too large for its field (a bug).
void encode(const StateView& view, std::string& bytes);
// The view back from encode()'s bytes, nextSweep derived from the clock.
void decode(std::string_view bytes, std::int64_t sweep_ms, StateView& view);
// A model whose view is `view` (its open connections and what was sent
// aside, which are not the model's): the keys and queues as viewed, waiters
// numbered in their queueing order, the grant instants (which the view does
// not keep, as they never decide the future) at 0. The explorer keeps states
// as bytes and rebuilds the model of each when it expands it.
Model model_of(const StateView& view, const SpecBounds& bounds, InjectedBug bug);

// One line for traces: `clock=3 next_token=4 keys={k1: o1 #2 until 5} ...`.
std::string describe(const StateView& view, const SpecBounds& bounds);

enum class StepKind { acquire, release, close, tick };

struct PropertyFailure {
  std::string property;  // the spec's name
  std::string detail;
};

// What the explored steps did, so that a config can be shown to reach what
// it is meant to (the sweep with waiters, each capacity limit). Counted over
// every step generated, new state or not.
struct Coverage {
  std::uint64_t takeovers = 0;          // A at once on a registered, expired key
  std::uint64_t release_handoffs = 0;   // a release gave the key to the head waiter
  std::uint64_t sweep_handoffs = 0;     // the sweep gave an expired key to the head waiter
  std::uint64_t sweep_deletions = 0;    // the sweep deleted an expired key without waiters
  std::uint64_t timeouts = 0;           // T at a waiter's deadline
  std::uint64_t busy_max_keys = 0;      // B: a new key while max_keys are registered
  std::uint64_t busy_max_waiters_per_key = 0;  // B: the key's queue is full
  std::uint64_t busy_max_waiters = 0;   // B: the server's waiters at their limit, the queue not
  std::uint64_t closes_dropping_waiters = 0;
};
void count_step(const StateView& before, const StateView& after, StepKind kind,
                const SpecBounds& bounds, Coverage& coverage);
std::string describe(const Coverage& coverage);

// TypeOK, AtMostOneHolder, TokensUnique, CapacityRespected, WaitersBeforeDeadline,
// ExpiredKeysSwept, and EveryWaiterAnswered in its bounded form.
std::optional<PropertyFailure> check_state(const StateView& view, const SpecBounds& bounds);

// TokensIncrease, FIFOHandoff, NoEarlyExpiry, AnsweredAtMostOnce, AnsweredInTime,
// BusyOnlyAtLimit: the spec's [][...]_vars properties, on one step.
std::optional<PropertyFailure> check_step(const StateView& before, const StateView& after,
                                          StepKind kind, const SpecBounds& bounds);

}  // namespace lockstep
