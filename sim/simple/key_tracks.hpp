// What a simple-mode timeline draws of each key, followed in one place for
// both of its recorders (the simulator's, sim/simple/timeline.*, and the
// playground's, web/timeline.*): shown a key's state after each step and
// told what that step sent, it closes the holder's bar when the holder
// changes (released or expired), marks grants, hand-offs (on release and by
// the sweep), takeovers and sweeps, and follows each waiter from the instant
// it joined the queue until it was served, timed out or dropped. The
// recorders differ only in where they read the state: the engine's key
// views, or the reference model's keys.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "impl/protocol.hpp"
#include "impl/units.hpp"
#include "sim/core/timeline_svg.hpp"

namespace lockstep::sim {

class KeyTracks {
 public:
  struct Waiter {
    // Tells apart waiters whose other fields are equal (the model's queueing
    // order); 0 where the source has no such identity.
    std::uint64_t identity = 0;
    ConnectionId connection;
    std::string owner;
    TimeMs deadline;
  };
  // A key held now, with its queue; a free key with no waiter is absent.
  struct State {
    std::string holder;  // for a new holder's bar
    Token token;
    TimeMs expiry;
    std::vector<Waiter> queue;
  };
  // What the step was: a request (acquire, or a release naming a token), a
  // connection closed, or an instant fired (timeouts, expiries, the sweep).
  enum class Cause { acquire, release, close, tick };
  // Whether the step sent `kind` to `connection` for `owner` on this key.
  using Answered = std::function<bool(ResponseKind kind, ConnectionId connection, const std::string& owner)>;

  // `state` is the key after the step, or null when it is free and no one
  // waits; `released` the token a release step named (when it parses).
  void update(const std::string& key, const State* state, Cause cause, TimeMs at, std::optional<Token> released,
              const Answered& answered);

  // The bars of what is still held or waiting, drawn up to `at` and ended
  // with `ended` ("end", "restart"); `close_all` also forgets them.
  std::vector<TimelineBar> open_bars(TimeMs at, const char* ended) const;
  void close_all(TimeMs at, const char* ended);

  // Whether `key` is followed now, and held with an expiry at or before `at`.
  bool held_and_due(const std::string& key, TimeMs at) const;
  std::vector<std::string> keys() const;

  const std::vector<TimelineBar>& bars() const { return bars_; }
  const std::vector<TimelineMark>& marks() const { return marks_; }
  void mark(TimelineMark mark) { marks_.push_back(std::move(mark)); }

 private:
  struct Waiting {
    Waiter waiter;
    TimeMs start;  // when it joined the queue
  };
  struct Track {
    bool held = false;
    std::string owner;
    Token token;
    TimeMs start;
    TimeMs expiry;
    std::vector<Waiting> waiting;
  };

  std::map<std::string, Track> tracks_;
  std::vector<TimelineBar> bars_;
  std::vector<TimelineMark> marks_;
};

}  // namespace lockstep::sim
