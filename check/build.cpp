#include "check/build.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "impl/assert.hpp"

namespace lockstep::history {

namespace {

std::int64_t floor_ms(std::int64_t us) { return us / 1000; }

// Which answers of a connection identify which requests: responses of a
// class can only answer requests of that class, so the k-th answer of a
// class to arrive bounds when the k-th request of it was handled, provided
// every request of the class is answered at once (releases, waitless
// acquires of an owner on a key, malformed lines). A class is `E`, a
// release's token and key, or an acquire's owner and key; its names are
// views into the lines and responses it was taken from (words of the
// protocol, without spaces), so that pairing a minute's lines builds no
// string.
struct RequestClass {
  char kind = 'E';  // 'E', 'R' (token, key) or 'A' (owner, key)
  std::uint64_t token = 0;
  std::string_view owner, key;
  friend bool operator==(const RequestClass&, const RequestClass&) = default;
};

struct RequestClassHash {
  std::size_t operator()(const RequestClass& c) const noexcept {
    const std::hash<std::string_view> text;
    std::size_t h = static_cast<std::size_t>(c.kind) * 0x9e3779b97f4a7c15ULL ^ c.token;
    h = (h ^ text(c.owner)) * 0x100000001b3ULL;
    return h ^ (text(c.key) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  }
};

// Looked into only, never iterated in an order that reaches an output.
template <typename Value>
using ClassMap = std::unordered_map<RequestClass, Value, RequestClassHash>;

RequestClass request_class(const SentLine& sent) {
  if (sent.malformed) return {};
  if (!sent.acquire) return {'R', sent.token, {}, sent.key};
  return {'A', 0, sent.owner, sent.key};
}

RequestClass response_class(const ResponseWords& response) {
  switch (response.kind) {
    case ResponseKind::error: return {};
    case ResponseKind::released:
    case ResponseKind::not_held: return {'R', response.token.value, {}, response.key};
    default: return {'A', 0, response.owner, response.key};
  }
}

// For each acquire, the arrival of its own answer when it can be told: the
// first answer (A, T or B) of its owner on its key on the connection after
// it, when no other acquire of that owner on that key was unanswered
// before it or was sent before that answer. A correct server answers each
// request once, so that answer is this acquire's.
void find_own_answers(ConnectionRecord& conn) {
  struct Moment {
    std::int64_t us;
    bool answer;
    std::size_t sent;  // index into conn.sent (sends)
  };
  ClassMap<std::vector<Moment>> classes;
  for (std::size_t i = 0; i < conn.sent.size(); ++i) {
    const auto& sent = conn.sent[i];
    if (!sent.malformed && !sent.errored && sent.acquire) classes[request_class(sent)].push_back({sent.sent_us, false, i});
  }
  for (const auto& received : conn.received) {
    if (!received.parsed || received.response.kind == ResponseKind::error || received.response.kind == ResponseKind::released ||
        received.response.kind == ResponseKind::not_held) {
      continue;
    }
    const auto found = classes.find(response_class(received.response));
    if (found != classes.end()) found->second.push_back({received.received_us, true, 0});
  }
  for (auto& [name, moments] : classes) {
    std::stable_sort(moments.begin(), moments.end(), [](const Moment& a, const Moment& b) { return a.us < b.us; });
    std::int64_t outstanding = 0;
    std::optional<std::size_t> alone;  // the one acquire outstanding, when there is one
    for (const auto& moment : moments) {
      if (!moment.answer) {
        alone = outstanding == 0 ? std::optional<std::size_t>(moment.sent) : std::nullopt;
        ++outstanding;
        continue;
      }
      if (alone) conn.sent[*alone].answered_by_ms = floor_ms(moment.us + 1000);
      alone.reset();
      if (outstanding > 0) --outstanding;
    }
  }
}

bool is_error(const ReceivedLine& received) {
  return received.parsed && received.response.kind == ResponseKind::error;
}

// Cluster mode: the `E`s of a connection that answer well-formed requests
// (a node that is not the leader, too many requests in flight, a stale
// session), which were therefore never applied. An `E` answers a line at
// once, so the connection's `E`s come in the order of the lines they
// answer: walking its lines in order, a malformed line takes the next `E`,
// and a well-formed request with no answer of its class (bound_requests'
// pairing) takes one when there are more `E`s left than malformed lines.
// A well-formed request with an answer of its class takes the next `E` all
// the same when that `E` came before any later line was sent and before an
// answer of its class: it can answer no other. (A client may send a request
// again on the connection that answered it `E not-leader`, docs/protocol.md,
// "Cluster nodes on the wire": the `E` answers the first sending, the
// answer of its class the second.) Returns that reading (ErrorReading).
ErrorReading assign_errors(ConnectionRecord& conn) {
  std::vector<std::size_t> errors;
  for (std::size_t i = 0; i < conn.received.size(); ++i) {
    if (is_error(conn.received[i])) errors.push_back(i);
  }
  ErrorReading reading;
  if (errors.empty()) return reading;
  ClassMap<std::int64_t> answers;
  for (const auto& received : conn.received) {
    if (received.parsed && received.response.kind != ResponseKind::error) ++answers[response_class(received.response)];
  }
  std::size_t malformed_left = 0;
  for (const auto& sent : conn.sent) malformed_left += sent.malformed ? 1 : 0;
  std::size_t next = 0;
  for (std::size_t i = 0; i < conn.sent.size(); ++i) {
    auto& sent = conn.sent[i];
    if (next >= errors.size()) break;
    if (sent.malformed) {
      --malformed_left;
      ++next;
      reading.push_back(static_cast<std::uint32_t>(i));
      continue;
    }
    auto& error = conn.received[errors[next]];
    const auto name = request_class(sent);
    const bool answered_first = std::any_of(conn.received.begin(), conn.received.end(), [&](const ReceivedLine& r) {
      return r.parsed && r.response.kind != ResponseKind::error && r.received_us >= sent.sent_us &&
             r.received_us < error.received_us && response_class(r.response) == name;
    });
    const bool only_this = !answered_first && error.received_us >= sent.sent_us &&
                           (i + 1 == conn.sent.size() || conn.sent[i + 1].sent_us > error.received_us);
    auto& answered = answers[name];
    if (answered > 0 && !only_this) {
      --answered;
      continue;
    }
    if (only_this || (errors.size() - next > malformed_left && error.received_us >= sent.sent_us)) {
      sent.errored = true;
      error.answers_request = true;
      ++next;
      reading.push_back(static_cast<std::uint32_t>(i));
    }
  }
  return reading;
}

// Every reading C3 allows of `conn`'s `E`s that answers the same malformed
// lines as `built` (a malformed line's `E` is owed; a reading that leaves
// one unanswered is a violation whatever else it explains), up to `cap`
// of them: the `E`s in the order read answer sends in the order sent, each
// a send made before it was read. Nothing past the cap.
std::optional<std::vector<ErrorReading>> error_readings(const ConnectionRecord& conn, const ErrorReading& built,
                                                        std::size_t cap) {
  std::vector<std::int64_t> read_us;
  for (const auto& received : conn.received) {
    if (is_error(received)) read_us.push_back(received.received_us);
  }
  std::vector<bool> owed(conn.sent.size(), false);
  for (const auto i : built) owed[i] = conn.sent[i].malformed;
  std::vector<ErrorReading> out;
  ErrorReading partial;
  bool over = false;
  // The search may also fail to find a complete reading down many paths
  // (an `E` no send can take, behind many that can): past this many
  // placements tried, it counts as too many readings.
  std::size_t steps_left = 10'000;
  // Places `E` number e on a send from `from` on.
  const auto place = [&](const auto& self, std::size_t e, std::size_t from) -> void {
    if (over) return;
    if (steps_left == 0) {
      over = true;
      return;
    }
    --steps_left;
    if (read_us.size() - e > conn.sent.size() - from) return;  // too few sends left for the `E`s
    if (e == read_us.size()) {
      for (std::size_t i = from; i < conn.sent.size(); ++i) {
        if (owed[i]) return;  // an owed `E` left unanswered
      }
      if (out.size() == cap) {
        over = true;
        return;
      }
      out.push_back(partial);
      return;
    }
    for (std::size_t j = from; j < conn.sent.size() && conn.sent[j].sent_us <= read_us[e]; ++j) {
      const bool malformed = conn.sent[j].malformed;
      if (malformed && !owed[j]) continue;
      partial.push_back(static_cast<std::uint32_t>(j));
      self(self, e + 1, j + 1);
      partial.pop_back();
      if (owed[j]) break;  // an owed `E` is not skipped
    }
  };
  place(place, 0, 0);
  if (over) return std::nullopt;
  return out;
}

// Marks `conn`'s sends and `E`s as `reading` reads them.
void apply_reading(ConnectionRecord& conn, const ErrorReading& reading) {
  for (auto& sent : conn.sent) sent.errored = false;
  std::size_t next = 0;
  for (auto& received : conn.received) {
    if (!is_error(received)) continue;
    received.answers_request = false;
    if (next < reading.size()) {
      auto& sent = conn.sent[reading[next]];
      if (!sent.malformed) {
        sent.errored = true;
        received.answers_request = true;
      }
    }
    ++next;
  }
}

void bound_requests(ConnectionRecord& conn, std::int64_t handled_within_ms) {
  ClassMap<std::vector<std::size_t>> requests;
  std::unordered_set<RequestClass, RequestClassHash> waiting_classes;
  for (std::size_t i = 0; i < conn.sent.size(); ++i) {
    if (conn.sent[i].errored) continue;
    const auto name = request_class(conn.sent[i]);
    requests[name].push_back(i);
    if (conn.sent[i].queued_kind) waiting_classes.insert(name);
  }
  ClassMap<std::vector<std::int64_t>> answers;
  for (const auto& received : conn.received) {
    if (received.parsed && !received.answers_request) {
      answers[response_class(received.response)].push_back(received.received_us);
    }
  }
  for (const auto& [name, indices] : requests) {
    if (waiting_classes.contains(name)) continue;
    const auto found = answers.find(name);
    if (found == answers.end()) continue;
    const auto& arrived = found->second;
    for (std::size_t k = 0; k < indices.size() && k < arrived.size(); ++k) {
      // One millisecond of slack: the server's grid is not aligned with ours.
      conn.sent[indices[k]].latest_ms = floor_ms(arrived[k] + 1000);
    }
  }
  // A tester that knows how late a request is read at most (a simulated
  // network) bounds every request; one millisecond for the grid.
  if (handled_within_ms >= 0) {
    for (auto& sent : conn.sent) sent.latest_ms = std::min(sent.latest_ms, floor_ms(sent.sent_us) + handled_within_ms + 1);
  }
  // Requests of a connection are handled in the order sent.
  std::int64_t later = unbounded_ms;
  for (auto it = conn.sent.rbegin(); it != conn.sent.rend(); ++it) {
    later = std::min(later, it->latest_ms);
    it->latest_ms = later;
  }
}

// Lookups by a string's contents without building a string (the maps are
// only looked into, never iterated, so their order reaches no output).
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};
template <typename Value>
using TextMap = std::unordered_map<std::string, Value, TextHash, std::equal_to<>>;

struct KeyBuilder {
  KeyInput& input;
  std::unordered_map<std::uint32_t, std::uint32_t> slots;
  TextMap<std::uint32_t> owners;
  // Cluster mode: each line with session fields sent so far, and its
  // request (a retry sends the same line again: one operation).
  TextMap<std::uint32_t> sessions = {};

  std::uint32_t slot(const ConnectionRecord& conn) {
    if (const auto found = slots.find(conn.id); found != slots.end()) return found->second;
    auto [it, added] = slots.emplace(conn.id, static_cast<std::uint32_t>(input.conns.size()));
    if (added) {
      KeyConnection made;
      made.id = conn.id;
      made.end_us = conn.end_us;
      made.closes = conn.closes;
      made.cut = conn.cut;
      made.closed_by_server = conn.closed_by_server;
      made.stopped = conn.stopped;
      input.conns.push_back(made);
      // Simple mode: a close the tester made takes effect within the
      // tolerance of its reading, after every request of its connection
      // was handled; the search goes on until then, so that a request still
      // in flight at the end is handled (and answered) like any other.
      if (!input.cluster.on && made.closes && !made.closed_by_server && !made.stopped && !made.cut) {
        input.horizon_ms = std::max(input.horizon_ms, floor_ms(made.end_us) + 1 + input.tolerance_ms);
      }
    }
    return it->second;
  }
  std::uint32_t owner(std::string_view name) {
    if (const auto found = owners.find(name); found != owners.end()) return found->second;
    const auto index = static_cast<std::uint32_t>(input.owners.size());
    owners.emplace(std::string(name), index);
    input.owners.emplace_back(name);
    return index;
  }
};

}  // namespace

std::vector<std::int64_t> incarnation_origins_us(const History& history) {
  std::vector<std::int64_t> origins{history.events.empty() ? 0 : history.events.front().t_us};
  bool awaiting_up = false;
  for (const auto& event : history.events) {
    if (event.kind == EventKind::down) {
      origins.push_back(event.t_us);
      awaiting_up = true;
    } else if (event.kind == EventKind::up && awaiting_up) {
      origins.back() = event.t_us;
      awaiting_up = false;
    }
  }
  return origins;
}

std::string origin_text(const History& history, std::uint32_t incarnation) {
  if (incarnation == 0) return "the history's first event";
  const auto origins = incarnation_origins_us(history);
  const auto first_us = history.events.empty() ? 0 : history.events.front().t_us;
  std::int64_t down_us = 0;
  std::uint32_t downs = 0;
  for (const auto& event : history.events) {
    if (event.kind == EventKind::down && ++downs == incarnation) {
      down_us = event.t_us;
      break;
    }
  }
  const auto at = incarnation < origins.size() ? origins[incarnation] : down_us;
  return fmt::format("the target's restart {} ({} at {:.3f} ms into the history)", incarnation,
                     at == down_us ? "its `down`" : "the `up` after its `down`", (at - first_us) / 1000.0);
}

namespace {

// build_inputs in two passes over the history, as a class so that each
// step is a function of its own. The first pass reads the events into
// connections (what each sent and read, how it ended, in which
// incarnation); the connections are then bounded on their own (errors
// placed, own answers found, requests bounded by later answers); the
// second pass visits the sends and reads again in the history's order and
// deals them out to one KeyInput per (incarnation, key).
class InputBuilder {
 public:
  InputBuilder(const History& history, bool prefix, const ErrorChoice* errors)
      : history_(history),
        errors_(errors),
        limits_(history.header.limits),
        cluster_(history.header.mode == Mode::cluster),
        prefix_(prefix),
        placed_(history.events.size(), {nowhere, 0}) {
    built_.cluster = cluster_;
    built_.sweep_ms = limits_.sweep_ms.value;
    built_.incarnation_start_us = incarnation_origins_us(history);
  }

  Built build() {
    find_ups();
    count_lines();
    for (std::size_t number = 0; number < history_.events.size(); ++number) read(number);
    end_reading();
    bound_connections();
    note_first_asks();
    for (std::size_t number = 0; number < history_.events.size(); ++number) deal(number);
    return std::move(built_);
  }

 private:
  static constexpr std::uint32_t nowhere = 0xffff'ffffu;

  // ---- the first pass: events into connections ----------------------------------

  void end_conn(std::size_t index, std::int64_t at_us, bool closes, bool by_server = false, bool stopped = false) {
    auto& conn = built_.conns[index];
    if (conn.end_us >= 0) return;
    conn.end_us = at_us;
    conn.closes = closes;
    conn.closed_by_server = by_server;
    conn.stopped = stopped;
  }

  ConnectionRecord& conn_for(const Event& event) {
    auto it = open_.find(event.conn);
    if (it == open_.end()) {
      ConnectionRecord made;
      made.id = event.conn;
      made.incarnation = incarnation_;
      made.opened_us = event.t_us;
      // Room for every line the history has on this connection number from
      // here on (a number used again reserves for all its uses, once).
      if (const auto left = lines_left_.find(event.conn); left != lines_left_.end()) {
        made.sent.reserve(left->second.first);
        made.received.reserve(left->second.second);
        lines_left_.erase(left);
      }
      built_.conns.push_back(std::move(made));
      it = open_.emplace(event.conn, built_.conns.size() - 1).first;
    }
    return built_.conns[it->second];
  }

  // How many lines each connection number sent and read, so that its
  // lists are allocated once (a minute's history has a few hundred thousand
  // lines on a few connections: growing by doubling copied each list and
  // left behind twice its size in memory touched once).
  void count_lines() {
    for (const auto& event : history_.events) {
      if (event.kind == EventKind::send) ++lines_left_[event.conn].first;
      if (event.kind == EventKind::recv) ++lines_left_[event.conn].second;
    }
  }

  // A `down` followed by an `up`: until that `up` the target accepts
  // nothing, so a connection first seen in between was accepted by no
  // incarnation the tester knows of (the old server still dying, at best).
  // It is not charged to the next incarnation, nor judged (a history
  // whose `down` has no `up` after it keeps the older reading: what
  // follows belongs to the next incarnation).
  void find_ups() {
    up_follows_.assign(history_.events.size(), false);
    bool up_seen = false;
    for (std::size_t i = history_.events.size(); i-- > 0;) {
      const auto kind = history_.events[i].kind;
      if (kind == EventKind::up) up_seen = true;
      if (kind == EventKind::down) {
        up_follows_[i] = up_seen;
        up_seen = false;
      }
    }
  }

  void read(std::size_t number) {
    const auto& event = history_.events[number];
    built_.end_us = event.t_us;
    if (event.kind != EventKind::down && event.kind != EventKind::up && event.kind != EventKind::nemesis &&
        !open_.contains(event.conn) && (limbo_.contains(event.conn) || awaiting_up_)) {
      if (limbo_.insert(event.conn).second) ++built_.limbo_connections;
      if (event.kind == EventKind::close || event.kind == EventKind::eof) limbo_.erase(event.conn);
      return;
    }
    switch (event.kind) {
      case EventKind::connect: conn_for(event); break;
      case EventKind::send: read_send(event, number); break;
      case EventKind::recv: read_recv(event, number); break;
      case EventKind::close:
      case EventKind::eof: {
        auto it = open_.find(event.conn);
        if (it == open_.end()) break;
        end_conn(it->second, event.t_us, true, event.kind == EventKind::eof);
        open_.erase(it);
        break;
      }
      case EventKind::down:
        // The target stopped: its connections end with it, their waiters
        // gone no later than now.
        for (const auto& [id, index] : open_) end_conn(index, event.t_us, true, true, true);
        open_.clear();
        built_.incarnation_end_us.push_back(event.t_us);
        ++incarnation_;
        limbo_.clear();  // they end with the target too
        awaiting_up_ = up_follows_[number];
        break;
      case EventKind::up:
        awaiting_up_ = false;
        break;
      case EventKind::nemesis: break;
    }
  }

  void read_send(const Event& event, std::size_t number) {
    auto& conn = conn_for(event);
    const auto index = open_[event.conn];
    if (after_long_line_.contains(index) || conn.end_us >= 0) return;
    SentLine sent;
    sent.sent_us = event.t_us;
    sent.line = event.line;
    const auto fill = [&sent](const Request& request) {
      std::visit([&](const auto& r) { sent.key = r.key; }, request);
      if (const auto* acquire = std::get_if<AcquireRequest>(&request)) {
        sent.acquire = true;
        sent.owner = acquire->owner;
        sent.lease_ms = acquire->lease_ms.value;
        sent.queued_kind = acquire->wait_ms.value > 0;
        sent.wait_ms = acquire->wait_ms.value;
      } else {
        sent.token = std::get<ReleaseRequest>(request).token.value;
      }
    };
    bool well_formed = false;
    if (cluster_) {
      // A cluster node also takes session fields after a request.
      const auto parsed = parse_session_request(event.line, limits_);
      if (const auto* request = std::get_if<SessionRequest>(&parsed)) {
        fill(request->request);
        sent.has_session = request->session.has_value();
        well_formed = true;
      }
    } else {
      const auto parsed = parse_request(event.line, limits_);
      if (const auto* request = std::get_if<Request>(&parsed)) {
        fill(*request);
        well_formed = true;
      }
    }
    if (!well_formed) {
      sent.malformed = true;
      // The server answers an over-long line `E` and closes: what follows is never read.
      if (event.line.size() > limits_.max_line_bytes) after_long_line_.insert(index);
    }
    placed_[number] = {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(conn.sent.size())};
    conn.sent.push_back(std::move(sent));
  }

  void read_recv(const Event& event, std::size_t number) {
    auto& conn = conn_for(event);
    ReceivedLine received;
    received.received_us = event.t_us;
    // Bytes of one connection arrive in order: a line arrived no
    // earlier than the lines read before it on the connection.
    received.arrived_from_us = event.arrived_from_us();
    if (!conn.received.empty()) {
      received.arrived_from_us = std::max(received.arrived_from_us, conn.received.back().arrived_from_us);
    }
    received.line = event.line;
    if (const auto response = parse_response(event.line)) {
      received.parsed = true;
      received.response = words_of(*response, received.line);
    }
    placed_[number] = {static_cast<std::uint32_t>(open_[event.conn]), static_cast<std::uint32_t>(conn.received.size())};
    conn.received.push_back(std::move(received));
  }

  // The response's names as views into its line (the parser took them
  // from it as they are, so each is found there).
  static ResponseWords words_of(const Response& response, std::string_view line) {
    const auto within = [line](const std::string& name) -> std::string_view {
      if (name.empty()) return {};
      const auto at = line.find(name);
      LOCKSTEP_ASSERT(at != std::string_view::npos);
      return line.substr(at, name.size());
    };
    return ResponseWords{response.kind, response.token, within(response.owner), within(response.key)};
  }

  void end_reading() {
    built_.incarnation_end_us.push_back(built_.end_us);
    for (const auto& [id, index] : open_) {
      end_conn(index, built_.end_us, false);
      built_.conns[index].cut = prefix_;
    }
  }

  void bound_connections() {
    std::size_t readings = 1;
    for (std::uint32_t index = 0; index < built_.conns.size(); ++index) {
      auto& conn = built_.conns[index];
      if (cluster_) {
        // A reading chosen by the checker; else assign_errors's, with the
        // others C3 allows listed, which the checker tries when its verdict
        // on this one is not the best (checker.cpp).
        const auto chosen = errors_ != nullptr ? errors_->find(index) : ErrorChoice::const_iterator{};
        if (errors_ != nullptr && chosen != errors_->end()) {
          apply_reading(conn, chosen->second);
        } else {
          const auto mine = assign_errors(conn);
          if (errors_ == nullptr) list_other_readings(index, mine, readings);
        }
      }
      bound_requests(conn, cluster_ ? -1 : history_.header.handled_within_ms);
      find_own_answers(conn);
      // A waiting acquire is answered (a hand-off, a sweep's grant, a `T`;
      // in a cluster, anything) only once it was handled or applied, so its
      // own answer bounds when that was, as it bounds the requests sent
      // before it on its connection (handled in the order sent).
      std::int64_t later = unbounded_ms;
      for (auto it = conn.sent.rbegin(); it != conn.sent.rend(); ++it) {
        later = std::min({later, it->latest_ms, it->answered_by_ms});
        it->latest_ms = later;
      }
    }
  }

  // Lists the other readings of connection `index`'s `E`s than `mine`,
  // unless the readings of the history pass error_readings_max (`readings`:
  // their number so far), when none is listed.
  void list_other_readings(std::uint32_t index, const ErrorReading& mine, std::size_t& readings) {
    if (built_.error_readings_over) return;
    auto found = error_readings(built_.conns[index], mine, error_readings_max + 1);
    if (found) std::erase(*found, mine);
    if (found && found->empty()) return;
    if (found) readings *= found->size() + 1;
    if (!found || readings > error_readings_max) {
      built_.error_readings_over = true;
      built_.other_error_readings.clear();
      return;
    }
    built_.other_error_readings.push_back({index, std::move(*found)});
  }

  // ---- the second pass: one KeyInput per (incarnation, key) -------------------

  // Connections in first-use order.
  KeyBuilder& builder_for(std::uint32_t at, std::string_view key) {
    auto& of_incarnation = builders_[at];
    if (const auto found = of_incarnation.find(key); found != of_incarnation.end()) return found->second;
    auto& input = built_.keys[{at, std::string(key)}];
    input.key = key;
    input.limits = limits_;
    input.tolerance_ms = history_.header.tolerance_ms;
    input.handled_within_ms = history_.header.handled_within_ms;
    input.horizon_ms = floor_ms(built_.incarnation_end_us[at]) + 1;
    if (cluster_) {
      input.cluster.on = true;
      input.cluster.clock_allowance_ms = history_.header.clock_allowance_ms;
      input.cluster.max_lateness_ms = history_.header.max_lateness_ms;
    }
    return of_incarnation.emplace(std::string(key), KeyBuilder{input, {}, {}}).first->second;
  }

  // Per connection: when each owner first asked for each key.
  void note_first_asks() {
    builders_.resize(built_.incarnation_start_us.size());
    first_asked_.resize(built_.conns.size());
    for (std::size_t c = 0; c < built_.conns.size(); ++c) {
      for (const auto& sent : built_.conns[c].sent) {
        if (!sent.acquire) continue;
        // (Cluster mode reads the first anywhere, simple mode the first on
        // the grant's connection: deal_recv.)
        const auto asked = request_class(sent);  // its owner and key
        if (!cluster_) {
          first_asked_[c].emplace(asked, sent.sent_us);
          continue;
        }
        auto [it, added] = first_asked_anywhere_.emplace(asked, sent.sent_us);
        if (!added) it->second = std::min(it->second, sent.sent_us);
      }
    }
  }

  void deal(std::size_t number) {
    if (placed_[number].first == nowhere) return;
    const auto conn = placed_[number].first;
    const auto index = placed_[number].second;
    if (history_.events[number].kind == EventKind::send) {
      deal_send(built_.conns[conn], built_.conns[conn].sent[index]);
    } else {
      deal_recv(conn, built_.conns[conn].received[index]);
    }
  }

  void deal_send(const ConnectionRecord& conn, const SentLine& sent) {
    if (sent.malformed || sent.errored) return;
    auto& builder = builder_for(conn.incarnation, sent.key);
    if (sent.has_session) {
      const auto [found, added] =
          builder.sessions.emplace(std::string(sent.line), static_cast<std::uint32_t>(builder.input.requests.size()));
      if (!added) {
        // A retry: another send of the same operation.
        auto& request = builder.input.requests[found->second];
        const auto slot = builder.slot(conn);
        request.resent.push_back(KeyCopy{slot, sent.sent_us});
        request.latest_ms = std::min(request.latest_ms, sent.latest_ms);
        auto& listed = builder.input.conns[slot].requests;
        if (listed.empty() || listed.back() != found->second) listed.push_back(found->second);
        return;
      }
    }
    KeyRequest made;
    made.conn = builder.slot(conn);
    made.sent_us = sent.sent_us;
    made.latest_ms = sent.latest_ms;
    made.line = sent.line;
    made.acquire = sent.acquire;
    if (sent.acquire) {
      made.owner = builder.owner(sent.owner);
      made.lease_ms = sent.lease_ms;
      made.wait_ms = sent.wait_ms;
    } else {
      made.token = sent.token;
    }
    builder.input.conns[made.conn].requests.push_back(static_cast<std::uint32_t>(builder.input.requests.size()));
    builder.input.requests.push_back(std::move(made));
  }

  void deal_recv(std::size_t conn_index, const ReceivedLine& received) {
    const auto& conn = built_.conns[conn_index];
    if (!received.parsed || received.response.kind == ResponseKind::error) return;
    auto& builder = builder_for(conn.incarnation, received.response.key);
    KeyObservation seen;
    seen.conn = builder.slot(conn);
    seen.received_us = received.received_us;
    seen.arrived_from_us = received.arrived_from_us;
    seen.kind = received.response.kind;
    seen.token = received.response.token.value;
    seen.line = received.line;
    if (!received.response.owner.empty()) seen.owner = builder.owner(received.response.owner);
    const auto observation = static_cast<std::uint32_t>(builder.input.observations.size());
    builder.input.conns[seen.conn].observations.push_back(observation);
    builder.input.observations.push_back(std::move(seen));
    // Cluster mode: a retry hears the outcome again; one grant, however
    // many times it is heard.
    if (received.response.kind == ResponseKind::granted &&
        (!cluster_ ||
         replays_.emplace(received.response.token.value, fmt::format("{} {}", received.response.key, received.response.owner))
             .second)) {
      // Issued no earlier than the first request of that owner on that key
      // sent on this connection (the grant answers one of them).
      std::int64_t from_us = received.received_us;
      // (Cluster mode: on any connection, the operation's sends being spread
      // over several.)
      const auto& asked = cluster_ ? first_asked_anywhere_ : first_asked_[conn_index];
      const auto first = asked.find(response_class(received.response));  // a grant's owner and key
      if (first != asked.end()) from_us = std::min(from_us, first->second);
      built_.grants.push_back(GrantSeen{received.response.token.value, std::string(received.response.key),
                                        std::string(received.response.owner), conn.id, conn.incarnation, observation,
                                        received.received_us, from_us});
    }
  }

  const History& history_;
  const ErrorChoice* errors_;  // the readings of `E`s chosen, or none (assign_errors's)
  const Limits& limits_;
  const bool cluster_, prefix_;
  Built built_;
  // The first pass.
  std::map<std::uint32_t, std::size_t> open_;  // connection id -> index in built_.conns
  // Connection number -> lines sent and read not yet reserved for (looked
  // into only).
  std::unordered_map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> lines_left_;
  std::uint32_t incarnation_ = 0;
  std::vector<bool> up_follows_;
  bool awaiting_up_ = false;
  std::set<std::uint32_t> limbo_;  // connections opened while awaiting the `up`
  std::set<std::size_t> after_long_line_;
  // Where each send and recv event went: (connection, index in its list),
  // so the second pass can visit them in the history's own order.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> placed_;
  // The second pass.
  std::vector<TextMap<KeyBuilder>> builders_;
  std::vector<ClassMap<std::int64_t>> first_asked_;
  ClassMap<std::int64_t> first_asked_anywhere_;
  std::set<std::pair<std::uint64_t, std::string>> replays_;  // cluster mode: grants heard so far
};

}  // namespace

Built build_inputs(const History& history, bool prefix, const ErrorChoice* errors) {
  return InputBuilder(history, prefix, errors).build();
}

Oracles make_oracles(const Built& built) {
  Oracles oracles;
  const auto incarnations = built.incarnation_start_us.size();
  oracles.first_use_ms.resize(incarnations);
  oracles.may_wait_ms.resize(incarnations);
  std::map<std::pair<std::uint32_t, std::string>, std::int64_t> first;
  for (const auto& conn : built.conns) {
    const auto end_ms = built.incarnation_end_us[conn.incarnation] / 1000 + 1;
    for (const auto& sent : conn.sent) {
      if (sent.malformed || sent.errored) continue;
      auto [it, added] = first.emplace(std::make_pair(conn.incarnation, sent.key), sent.sent_us / 1000);
      if (!added) it->second = std::min(it->second, sent.sent_us / 1000);
      if (sent.queued_kind && !sent.errored) {
        // A cluster's Timeout may be late without bound: there a waiter
        // waits until its own answer, or the end.
        auto until = sent.latest_ms >= unbounded_ms || built.cluster ? end_ms : sent.latest_ms + sent.wait_ms + 1;
        until = std::min(until, sent.answered_by_ms);
        oracles.may_wait_ms[conn.incarnation].emplace_back(sent.sent_us / 1000, 1);
        oracles.may_wait_ms[conn.incarnation].emplace_back(until + 1, -1);
      }
    }
  }
  for (auto& steps : oracles.may_wait_ms) {
    std::sort(steps.begin(), steps.end());
    std::int64_t count = 0;
    for (auto& [at, change] : steps) change = (count += change);
  }
  for (const auto& [where, at] : first) oracles.first_use_ms[where.first].push_back(at);
  for (auto& list : oracles.first_use_ms) std::sort(list.begin(), list.end());
  for (const auto& grant : built.grants) oracles.tokens.insert(grant.token);
  return oracles;
}

// Upper bounds, so that a `B` for a global limit is accepted whenever the
// limit may have been reached; a server that exceeds a global limit is not
// caught here (DESIGN.md, "What couples keys").
KeyOracles key_oracles(const Oracles& oracles, const Limits& limits, std::uint32_t incarnation, const KeyInput& input) {
  std::int64_t own_first_ms = unbounded_ms;
  for (const auto& request : input.requests) own_first_ms = std::min(own_first_ms, request.sent_us / 1000);
  KeyOracles made;
  const auto* first = &oracles.first_use_ms[incarnation];
  const auto* waits = &oracles.may_wait_ms[incarnation];
  const auto max_keys = limits.max_keys, max_waiters = limits.max_waiters;
  made.keys_may_be_full = [first, own_first_ms, max_keys](std::int64_t at_ms) {
    auto used = static_cast<std::uint64_t>(std::upper_bound(first->begin(), first->end(), at_ms) - first->begin());
    if (own_first_ms <= at_ms && used > 0) --used;
    return used >= max_keys;
  };
  made.waiters_may_be_full = [waits, max_waiters](std::int64_t at_ms) {
    const auto it = std::upper_bound(waits->begin(), waits->end(), std::make_pair(at_ms, std::numeric_limits<std::int64_t>::max()));
    const std::int64_t count = it == waits->begin() ? 0 : std::prev(it)->second;
    return static_cast<std::uint64_t>(count) > max_waiters;  // the request asking is one of them
  };
  made.waiters_may_be_full_within = [waits, max_waiters](std::int64_t from_ms, std::int64_t to_ms) {
    auto it = std::upper_bound(waits->begin(), waits->end(), std::make_pair(from_ms, std::numeric_limits<std::int64_t>::max()));
    std::int64_t count = it == waits->begin() ? 0 : std::prev(it)->second;
    for (; it != waits->end() && it->first <= to_ms; ++it) count = std::max(count, it->second);
    return static_cast<std::uint64_t>(count) > max_waiters;
  };
  const auto* tokens = &oracles.tokens;
  made.token_was_seen = [tokens](std::uint64_t token) { return tokens->contains(token); };
  return made;
}

std::string at_text(std::int64_t us, std::int64_t origin_us) { return fmt::format("+{:.3f} ms", (us - origin_us) / 1000.0); }

}  // namespace lockstep::history
