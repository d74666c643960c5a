// The reference checker: a deliberately slow reading of a small history by
// the numbered rules of docs/protocol.md ("How lockstep reads these rules":
// rules S1.. for simple mode, C1.. for a cluster), written apart from the
// checker (frontier.cpp, cluster_frontier.cpp) so that the two can be held
// against each other (tests/property/history_reference_test.cpp). It shares
// only the history reader (history.hpp) and the models (model/model.hpp,
// model/cluster_model.hpp), which produce every response.
//
// The search is plain: the server's instants are visited one millisecond
// at a time; a state is a copy of the model plus what the history has
// explained so far; at each instant every available step (a request
// handled, a close, and in a cluster an Expire or a Timeout the table's
// clock allows) is applied in every order, each produced response matched
// to every observation it may be or left unheard where the rules allow.
// States equal in everything that decides the future are kept once (the
// least lateness of them in a cluster). The only pruning is monotone: a
// state dies when an observation can no longer be caused, a request or a
// close passed its latest instant, or (with a stated maximum) its lateness
// passed the maximum. DESIGN.md, "The reference", says more.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "check/history.hpp"

namespace lockstep::history {

// The size the reference accepts: past it, `check-history --reference`
// refuses (exit 2) rather than run for hours.
inline constexpr std::size_t reference_connections_max = 4;
inline constexpr std::size_t reference_keys_max = 2;
inline constexpr std::size_t reference_requests_max = 12;
inline constexpr std::size_t reference_responses_max = 64;
inline constexpr std::int64_t reference_span_ms_max = 2'000;  // from the first event to the last

struct ReferenceOptions {
  std::uint64_t states_max = 20'000'000;  // states stepped before the verdict is unknown
  // States held at once (one instant's layer, or the readings of one step's
  // answers) before the verdict is unknown: a step whose answers may each be
  // heard on several connections or go unheard multiplies its readings, and
  // without this bound one history of a dozen requests once held 24 GB (250,000 of them: about 750 MB).
  std::uint64_t held_max = 250'000;
  // Each key read alone (the history's part about it: its requests that
  // parse, the responses that name it, every connection's life), so that
  // no rule couples keys: a looser reading than the rules, and than the
  // checker's, which splits the history by key too but couples the keys by
  // the sweep phase, the order of tokens and of a connection's requests as
  // far as windows of instants carry them (DESIGN.md, "What couples keys").
  // The differential test holds the checker between the two readings.
  bool per_key = false;
  // Print each explanation found, step by step, to stderr (the command
  // line sets it from LOCKSTEP_REFERENCE_TRACE; model/ reads no environment).
  bool trace = false;
};

struct ReferenceResult {
  enum class Verdict { conforms, violation, unknown };
  Verdict verdict = Verdict::unknown;
  // Cluster mode, when some explanation exists: the least lateness (ms) of
  // any explanation (rule C14), whether or not it is within the maximum.
  std::int64_t least_lateness_ms = -1;
  std::uint64_t states = 0;
  std::string reason;  // for a violation or unknown: one line
};

// Why the reference will not read `history` (past its size, or a feature it
// does not read), or nothing.
std::optional<std::string> reference_refusal(const History& history);

// The history must be one reference_refusal accepts.
ReferenceResult check_reference(const History& history, const ReferenceOptions& options = {});

}  // namespace lockstep::history
