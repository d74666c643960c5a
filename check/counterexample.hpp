// A key's violation as a conformance vector (docs/protocol.md, "Conformance
// vectors"), so that a real-time finding becomes an exact test that
// `lockstep conform --exec` replays against the server with its test clock.
//
// The vector holds the key's requests and the closes of the connections
// that made them, from the shrunk prefix of the finding, each at the
// millisecond it was sent (a timing inside every request's window), and
// expects what the reference model answers at exactly those instants: a
// correct server passes it. It is written only when the model's answers
// there differ from what the server sent, so that a server that repeats
// its answers at that timing fails the vector; the first difference is
// named in the vector's comments.
#pragma once

#include <cstdint>
#include <string>

#include "check/history.hpp"

namespace lockstep::history {

struct CounterExample {
  bool written = false;
  std::string text;     // the .vec, when written
  std::string why_not;  // when not: why no exact timing shows the violation
};

// `cut_us` ends the prefix (events from then on are left out); only the
// events of incarnation `incarnation` (counted by `down` events) are used.
CounterExample counterexample_vector(const History& history, std::uint32_t incarnation, const std::string& key,
                                     std::int64_t cut_us);

}  // namespace lockstep::history
