// The reference checker (reference.hpp). Every rule it applies cites the
// numbered rule of docs/protocol.md ("How lockstep reads these rules") it
// implements: S1.. for simple mode, C1.. for a cluster.
//
// The search is reference_search.cpp; the steps it takes are
// reference_simple.cpp and reference_cluster.cpp, and what they answer is
// matched in reference_match.cpp, over the types of reference_internal.hpp.
// This file reads the history, splits it by key, and gives the verdict.
#include "check/reference.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "check/reference_internal.hpp"

namespace lockstep::history {

namespace reference {

// ---- the history as the reference reads it ----------------------------------

// The fields of a well-formed request.
void take_request(Send& s, const Request& request) {
  std::visit(
      [&](const auto& q) {
        using Q = std::decay_t<decltype(q)>;
        s.key = std::string(q.key);
        if constexpr (std::is_same_v<Q, AcquireRequest>) {
          s.acquire = true;
          s.owner = std::string(q.owner);
          s.lease_ms = q.lease_ms.value;
          s.wait_ms = q.wait_ms.value;
        } else {
          s.token = q.token.value;
        }
      },
      request);
}

// C4: the sends of one line with session fields (client, seq) are one
// operation; a send without them is an operation of its own.
void take_operations(Reading& r) {
  std::map<std::string, std::int32_t> by_line;
  for (std::uint32_t i = 0; i < r.sends.size(); ++i) {
    auto& s = r.sends[i];
    const auto fields = std::count(s.line.begin(), s.line.end(), ' ');
    const bool session = !s.malformed && ((s.acquire && fields == 6) || (!s.acquire && fields == 4));
    auto found = session ? by_line.find(s.line) : by_line.end();
    if (found == by_line.end()) {
      s.op = static_cast<std::int32_t>(r.ops.size());
      r.ops.push_back(Op{{}, s.key});
      if (session) by_line.emplace(s.line, s.op);
    } else {
      s.op = found->second;
    }
    r.ops[static_cast<std::size_t>(s.op)].sends.push_back(i);
  }
}

Reading read(const History& history) {
  Reading r;
  r.header = history.header;
  r.cluster = history.header.mode == Mode::cluster;
  std::map<std::uint32_t, std::uint32_t> slot;
  const auto conn_of = [&](const Event& e) {
    auto [it, fresh] = slot.emplace(e.conn, static_cast<std::uint32_t>(r.conns.size()));
    if (fresh) {
      Conn c;
      c.id = e.conn;
      c.open_us = e.t_us;
      r.conns.push_back(c);
    }
    return it->second;
  };
  for (const auto& e : history.events) {
    if (e.kind == EventKind::nemesis) continue;
    if (e.kind == EventKind::connect) conn_of(e);
    if (e.kind == EventKind::send) {
      Send s;
      s.conn = conn_of(e);
      s.us = e.t_us;
      s.line = e.line;
      if (r.cluster) {
        auto parsed = parse_session_request(e.line, r.header.limits);
        if (const auto* ok = std::get_if<SessionRequest>(&parsed)) {
          take_request(s, ok->request);
        } else {
          s.malformed = true;
        }
      } else {
        auto parsed = parse_request(e.line, r.header.limits);
        if (const auto* ok = std::get_if<Request>(&parsed)) {
          take_request(s, *ok);
        } else {
          s.malformed = true;
        }
      }
      r.conns[s.conn].sends.push_back(static_cast<std::uint32_t>(r.sends.size()));
      r.sends.push_back(std::move(s));
    }
    if (e.kind == EventKind::recv) {
      Seen o;
      o.conn = conn_of(e);
      o.read_us = e.t_us;
      o.from_us = e.arrived_from_us();
      o.response = parse_response(e.line);
      r.conns[o.conn].seen.push_back(static_cast<std::uint32_t>(r.seen.size()));
      r.seen.push_back(std::move(o));
    }
    if (e.kind == EventKind::close || e.kind == EventKind::eof) {
      auto& c = r.conns[conn_of(e)];
      if (c.end == Conn::End::open) {
        c.end = e.kind == EventKind::close ? Conn::End::tester : Conn::End::server;
        c.end_us = e.t_us;
      }
    }
  }
  if (!history.events.empty()) {
    r.first_ms = floor_ms(history.events.front().t_us);
    r.end_us = history.events.back().t_us;
  }
  for (auto& c : r.conns) {
    if (c.end == Conn::End::open) c.end_us = r.end_us;  // watched until the history's end (S12, C13)
  }
  if (!r.cluster) return r;
  take_operations(r);
  return r;
}

}  // namespace reference

using reference::floor_ms;
using reference::read;
using reference::Reading;
using reference::Search;

namespace {

// The key a request line or a response line names, if any.
std::optional<std::string> key_named(const Event& e) {
  if (e.kind == EventKind::recv) {
    const auto response = parse_response(e.line);
    if (!response || response->kind == ResponseKind::error) return std::nullopt;
    return response->key;
  }
  const auto space = e.line.find(' ');
  if (space == std::string::npos) return std::nullopt;
  const auto next = e.line.find(' ', space + 1);
  return e.line.substr(space + 1, next == std::string::npos ? std::string::npos : next - space - 1);
}

// ReferenceOptions::per_key: the part of the history about `key`: every
// event of a connection's life, its requests that parse, the responses
// that name it.
History part_of(const History& history, const std::string& key) {
  History part;
  part.header = history.header;
  for (const auto& e : history.events) {
    if (e.kind == EventKind::send || e.kind == EventKind::recv) {
      if (key_named(e) != key) continue;
      if (e.kind == EventKind::send) {
        const bool cluster = history.header.mode == Mode::cluster;
        const bool parses = cluster ? std::holds_alternative<SessionRequest>(parse_session_request(e.line, history.header.limits))
                                    : std::holds_alternative<Request>(parse_request(e.line, history.header.limits));
        if (!parses) continue;
      }
    }
    part.events.push_back(e);
  }
  return part;
}

}  // namespace

std::optional<std::string> reference_refusal(const History& history) {
  std::set<std::uint32_t> conns;
  std::set<std::string> keys;
  std::size_t requests = 0, responses = 0;
  for (const auto& e : history.events) {
    if (e.kind == EventKind::down || e.kind == EventKind::up) {
      return std::string("the reference reads no restart of the target (down, up)");
    }
    if (e.kind == EventKind::connect || e.kind == EventKind::send || e.kind == EventKind::recv) conns.insert(e.conn);
    if (e.kind == EventKind::recv) ++responses;
    if (e.kind != EventKind::send) continue;
    ++requests;
    if (e.line.size() > history.header.limits.max_line_bytes) {
      return std::string("the reference reads no line over max_line_bytes");
    }
    if (auto key = key_named(e)) keys.insert(std::move(*key));
  }
  if (conns.size() > reference_connections_max) {
    return fmt::format("the reference reads at most {} connections, the history has {}", reference_connections_max,
                       conns.size());
  }
  if (keys.size() > reference_keys_max) {
    return fmt::format("the reference reads at most {} keys, the history has {}", reference_keys_max, keys.size());
  }
  if (requests > reference_requests_max) {
    return fmt::format("the reference reads at most {} requests, the history has {}", reference_requests_max,
                       requests);
  }
  if (responses > reference_responses_max) {
    return fmt::format("the reference reads at most {} responses, the history has {}", reference_responses_max,
                       responses);
  }
  if (!history.events.empty()) {
    const auto span = floor_ms(history.events.back().t_us) - floor_ms(history.events.front().t_us);
    if (span > reference_span_ms_max) {
      return fmt::format("the reference reads a history of at most {} ms, this one lasts {} ms",
                         reference_span_ms_max, span);
    }
  }
  return std::nullopt;
}

// C3: every way the `E`s of the connections may answer their sends. On a
// connection, the `E`s answer sends in order, each `E` a send made before
// it was read, one send each; a send an `E` answers was never applied. The
// readings are every such choice on every connection (their product); a
// connection whose `E`s no choice places gives one violation. Past
// `readings_max` readings: nullopt (the reference's verdict is unknown).
constexpr std::size_t readings_max = 256;

std::optional<std::vector<Reading>> error_readings(const Reading& base) {
  std::vector<Reading> readings{base};
  if (!base.cluster) return readings;
  for (const auto& c : base.conns) {
    std::vector<std::uint32_t> errors;
    for (const auto o : c.seen) {
      if (base.seen[o].response && base.seen[o].response->kind == ResponseKind::error) errors.push_back(o);
    }
    if (errors.empty()) continue;
    // Every increasing choice of sends for the `E`s, in order.
    std::vector<std::vector<std::uint32_t>> choices;
    std::vector<std::uint32_t> chosen;
    const std::function<void(std::size_t, std::size_t)> place = [&](std::size_t e, std::size_t from) {
      if (e == errors.size()) {
        choices.push_back(chosen);
        return;
      }
      for (std::size_t k = from; k < c.sends.size(); ++k) {
        if (base.sends[c.sends[k]].us > base.seen[errors[e]].read_us) break;
        chosen.push_back(c.sends[k]);
        place(e + 1, k + 1);
        chosen.pop_back();
      }
    };
    place(0, 0);
    if (choices.empty()) {
      Reading r = base;
      r.violation = fmt::format("an E on connection {} answers no request (rule C3)", c.id);
      return std::vector<Reading>{r};
    }
    if (readings.size() * choices.size() > readings_max) return std::nullopt;
    std::vector<Reading> next;
    for (const auto& r : readings) {
      for (const auto& choice : choices) {
        Reading made = r;
        for (const auto send : choice) made.sends[send].errored = true;
        for (const auto o : errors) made.errors_taken.push_back(o);
        next.push_back(std::move(made));
      }
    }
    readings = std::move(next);
  }
  return readings;
}

ReferenceResult check_reference(const History& history, const ReferenceOptions& options) {
  if (!options.per_key) {
    // C3: an explanation may read the `E`s any way they may answer; the
    // verdict is the best of the readings (one conforms, or the least
    // lateness any has).
    const auto readings = error_readings(read(history));
    if (!readings) {
      ReferenceResult unknown;
      unknown.reason = fmt::format("more than {} ways to read the `E`s (rule C3)", readings_max);
      return unknown;
    }
    ReferenceResult best;
    for (const auto& reading : *readings) {
      Search search(reading, options);
      auto one = search.run();
      const auto states = best.states + one.states;
      const bool first = &reading == &readings->front();
      using V = ReferenceResult::Verdict;
      const auto rank = [](V v) { return v == V::conforms ? 2 : v == V::unknown ? 1 : 0; };
      const auto least = best.least_lateness_ms < 0 ? one.least_lateness_ms
                         : one.least_lateness_ms < 0 ? best.least_lateness_ms
                                                     : std::min(best.least_lateness_ms, one.least_lateness_ms);
      if (first || rank(one.verdict) > rank(best.verdict)) best = std::move(one);
      best.states = states;
      best.least_lateness_ms = least;
    }
    return best;
  }
  std::vector<std::string> keys;
  for (const auto& e : history.events) {
    if (e.kind != EventKind::send) continue;
    if (auto key = key_named(e); key && std::find(keys.begin(), keys.end(), *key) == keys.end()) keys.push_back(*key);
  }
  ReferenceResult all;
  all.verdict = ReferenceResult::Verdict::conforms;
  all.least_lateness_ms = history.header.mode == Mode::cluster ? 0 : -1;
  ReferenceOptions whole = options;
  whole.per_key = false;
  for (const auto& key : keys) {
    const auto one = check_reference(part_of(history, key), whole);
    all.states += one.states;
    if (one.verdict != ReferenceResult::Verdict::conforms && all.verdict == ReferenceResult::Verdict::conforms) {
      all.verdict = one.verdict;
      all.reason = fmt::format("key `{}`: {}", key, one.reason);
    }
    if (one.least_lateness_ms < 0) {
      all.least_lateness_ms = -1;
    } else if (all.least_lateness_ms >= 0) {
      all.least_lateness_ms = std::max(all.least_lateness_ms, one.least_lateness_ms);
    }
  }
  return all;
}

}  // namespace lockstep::history
