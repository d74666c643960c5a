// A playground session: the inputs a learner gives (requests typed on named
// connections, connections closed, the clock moved) fed, at the same
// instants, to four services side by side:
//
//   model          the reference model of simple mode (what is right);
//   engine         the simple-mode engine, with the catalogued bug chosen on
//                  the page (InjectedBug::none by default);
//   cluster-model  the reference model of cluster mode's rules;
//   cluster        the one-node cluster (Expire at the deadline, no sweep),
//                  through the same on_line/on_close/advance/next_due calls
//                  the vector runner uses.
//
// The session is a driver, like the vector runner: it owns the clock and the
// connection names and the services own nothing but their state. Moving the
// clock fires what is due instant by instant, so every response is recorded
// with the instant it was sent at. Inputs are kept, so that choosing another
// bug replays them on fresh services. Nothing here reads a clock.
//
// Limits: connections_max connections, inputs_max inputs, a request line of
// at most request_bytes_max bytes; past them an input is refused with a
// reason and changes nothing.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "impl/bugs.hpp"
#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "impl/units.hpp"
#include "model/judge.hpp"
#include "model/model.hpp"
#include "model/runner.hpp"
#include "model/vector.hpp"
#include "web/timeline.hpp"

namespace lockstep::web {

enum class Source { model, engine, cluster_model, cluster };
inline constexpr std::array sources{Source::model, Source::engine, Source::cluster_model, Source::cluster};
const char* source_name(Source source);

// One input, as given; replayed as is when the bug changes.
struct Input {
  enum class Kind { request, close, clock };
  Kind kind = Kind::request;
  TimeMs at;               // the instant it happened (for clock: the instant moved to)
  std::string connection;  // request, close: the name
  ConnectionId id;         // and the connection it named then
  std::string line;        // request
};

// What a column of the page shows, in the order it happened: requests,
// closes and every service's responses.
struct Entry {
  enum class Kind { request, close, response };
  Kind kind = Kind::request;
  TimeMs at;
  std::string connection;
  std::string line;  // the request, or the response's wire line
  Source source = Source::model;  // responses only
  std::size_t input = 0;          // the input that caused it
  Response response;              // responses only
  bool closed_by_server = false;  // close: the line was too long
};

// The first instant at which the engine's responses differ from the model's
// (as multisets of connection and line; an `E` matches any `E`): the entries
// the engine sent there that the model did not, and the other way round.
struct Divergence {
  TimeMs at;
  std::vector<std::size_t> engine_only;  // indices into entries()
  std::vector<std::size_t> model_only;
};

struct ConnectionState {
  std::string name;
  ConnectionId id;
  bool open = true;
};

class Session {
 public:
  static constexpr std::size_t connections_max = 12;
  static constexpr std::size_t inputs_max = 2'000;
  static constexpr std::size_t request_bytes_max = 4 * 1024;

  // Throws std::invalid_argument when the limits are not valid.
  explicit Session(Limits limits, InjectedBug bug = InjectedBug::none);
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Each input returns why it was refused (and changed nothing), or nothing.
  // A name not open yet opens a new connection (a closed name reopens as a
  // new connection, as in a vector).
  std::optional<std::string> open(const std::string& connection);
  std::optional<std::string> send(const std::string& connection, const std::string& line);
  std::optional<std::string> close(const std::string& connection);
  // Moves the clock to `at`; `at` equal to now ends the current instant (one
  // more move to it, as the runner's barrier: nothing for a correct service).
  std::optional<std::string> advance_to(TimeMs at);
  // The earliest instant after now at which any service has something due.
  std::optional<TimeMs> next_due() const;
  // The first name of the form cN that was never used.
  std::string fresh_connection_name() const;
  // Replays every input on fresh services with `bug` in the engine.
  void set_bug(InjectedBug bug);

  TimeMs now() const { return now_; }
  const Limits& limits() const { return limits_; }
  InjectedBug bug() const { return bug_; }
  const std::vector<Input>& inputs() const { return inputs_; }
  const std::vector<ConnectionState>& connections() const { return connections_; }
  // The name a connection had (ids are never reused).
  std::string connection_name(ConnectionId id) const;
  const std::vector<Entry>& entries() const { return entries_; }
  // Why a service stopped (it threw, e.g. a broken invariant), if it did.
  const std::optional<std::string>& failure(Source source) const;
  std::optional<Divergence> first_divergence() const;
  // What `source` sent at `at`, as a vector judge sees it.
  std::vector<ObservedResponse> sent_at(Source source, TimeMs at) const;
  // Instants at which `source` sent something, ascending.
  std::vector<TimeMs> instants_with_responses(Source source) const;
  // The reference model of simple mode, for the view of every key.
  const Model& model() const;
  // The next instant at which simple mode sweeps.
  TimeMs next_sweep() const;

  // The session as a conformance vector: its config, every input, and what
  // the reference of `mode` answered (the simple-mode model, or the cluster
  // model) as expect lines, tokens named $tN; it ends at now.
  std::string export_vector(VectorMode mode) const;
  // The timeline of simple mode's model so far, on the simulator's canvas.
  std::string timeline_svg() const;

 private:
  struct Services;

  void apply(const Input& input);
  void feed(Source source, const Input& input, std::size_t index);
  void record(Source source, TimeMs at, const Outputs& out, std::size_t index);
  const ConnectionState* find_open(const std::string& connection) const;

  Limits limits_;
  InjectedBug bug_;
  TimeMs now_{0};
  std::uint64_t last_connection_id_ = 0;
  std::vector<Input> inputs_;
  std::vector<ConnectionState> connections_;
  std::map<ConnectionId, std::string> names_;  // every connection ever opened
  std::vector<Entry> entries_;
  std::unique_ptr<Services> services_;
  SessionTimeline timeline_;
};

}  // namespace lockstep::web
