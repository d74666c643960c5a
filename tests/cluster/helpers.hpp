// Shorthands for the cluster unit tests: commands built in one line, and a
// machine driven entry by entry with its outputs rendered as text, so a test
// reads like the story it checks.
#pragma once

#include <string>

#include <fmt/format.h>

#include "impl/cluster/lock_machine.hpp"

namespace lockstep::cluster::testing {

// Client ids are strings; these tests number their clients, and client 0
// is an anonymous request (no session fields) when its seq is 0.
inline Session session(std::uint64_t client, std::uint64_t seq) {
  return Session{client == 0 ? std::string() : std::to_string(client), seq};
}

inline Acquire acquire(std::uint64_t client, std::uint64_t seq, std::uint64_t connection, std::string key,
                       std::string owner, std::int64_t lease, std::int64_t wait, std::int64_t now) {
  return Acquire{session(client, seq), ConnectionId{connection}, std::move(key), std::move(owner),
                 DurationMs{lease}, DurationMs{wait}, TimeMs{now}};
}

inline Release release(std::uint64_t client, std::uint64_t seq, std::uint64_t connection, std::string key,
                       std::uint64_t token, std::int64_t now) {
  return Release{session(client, seq), ConnectionId{connection}, std::move(key), Token{token}, TimeMs{now}};
}

// The command as the leadership of `epoch` proposed it.
template <class C>
C at_epoch(C command, std::uint64_t epoch) {
  command.epoch = epoch;
  return command;
}

inline std::string show(const Outputs& outputs) {
  std::string text;
  for (const auto& o : outputs) {
    if (!text.empty()) text += "; ";
    text += fmt::format("c{} {}", o.connection.value, format_response(o.response));
  }
  return text;
}

// A machine fed one command per log index, checked after each.
struct Driven {
  LockMachine machine;
  raft::Index index = 0;

  explicit Driven(MachineConfig config = {}) : machine(std::move(config)) {}

  Applied apply(const Command& command) {
    Applied applied = machine.apply_command(command, ++index);
    machine.check_invariants();
    return applied;
  }
  std::string run(const Command& command) { return show(apply(command).responses); }
};

inline Limits tight_limits() {
  Limits limits;
  limits.max_keys = 2;
  limits.max_waiters_per_key = 2;
  limits.max_waiters = 3;
  return limits;
}

}  // namespace lockstep::cluster::testing
