// The reference's reading of answers (reference_internal.hpp): the model's
// tokens bound to the history's (S13, C15), and an answer the model gave
// matched to the observations it may be (S9..S12, C8, C12, C13), or to
// none. Both modes' steps end here; a file of its own for the rules of
// what is heard, apart from those of what the model does.
#include "check/reference_internal.hpp"

#include <fmt/format.h>

namespace lockstep::history::reference {

// Binds the model's token `m` to the history's `h`: one token per grant,
// and bound tokens increase in the order the model issued them.
bool Search::bind(State& s, std::uint64_t m, std::uint64_t h) {
  if (m == 0 || m > tokens_max) throw std::logic_error("reference: more grants than requests");
  if (s.bound[m - 1] != 0) return s.bound[m - 1] == h;
  for (const auto& [named, issued] : s.unissued) {
    if (named == h && m <= issued) return false;
  }
  for (std::size_t i = 0; i < tokens_max; ++i) {
    const auto b = s.bound[i];
    if (b == 0) continue;
    if (b == h) return false;
    if ((i + 1 < m) != (b < h)) return false;
  }
  s.bound[m - 1] = h;
  return true;
}

std::vector<Search::Named> Search::name_token(const State& s, std::uint64_t h, std::uint32_t send) const {
  std::vector<Named> out;
  for (std::size_t i = 0; i < tokens_max; ++i) {
    if (s.bound[i] == h) return {Named{s, i + 1}};
  }
  const std::uint64_t issued =
      (r_.cluster ? s.cluster->model.next_token().value : s.simple->model.next_token().value) - 1;
  for (std::uint64_t m = 1; m <= issued; ++m) {
    if (s.bound[m - 1] != 0) continue;
    State n = s;
    if (bind(n, m, h)) out.push_back(Named{std::move(n), m});
  }
  State never = s;  // no grant's: none issued so far
  never.unissued.emplace_back(h, issued);
  std::sort(never.unissued.begin(), never.unissued.end());
  out.push_back(Named{std::move(never), (std::uint64_t{1} << 62) + send});
  return out;
}

std::uint32_t Search::slot_of(ConnectionId id) const {
  for (std::uint32_t i = 0; i < r_.conns.size(); ++i) {
    if (r_.conns[i].id == id.value) return i;
  }
  return 0;
}

// Whether observation `o` is the response `p` (tokens as bound), binding
// a grant's token.
bool Search::same(State& s, const Produced& p, const Response& o) {
  const auto& a = p.response;
  if (a.kind != o.kind) return false;
  switch (a.kind) {
    case ResponseKind::error:
      return true;
    case ResponseKind::timed_out:
    case ResponseKind::busy:
      return a.owner == o.owner && a.key == o.key;
    case ResponseKind::released:
    case ResponseKind::not_held:
      return a.key == o.key && p.echo == o.token.value;
    case ResponseKind::granted:
      return a.owner == o.owner && a.key == o.key && bind(s, a.token.value, o.token.value);
  }
  return false;
}

// S12: the tester stopped watching the connection before `p` was owed.
bool Search::may_be_unseen_simple(const Produced& p) const {
  const auto& c = r_.conns[p.conn];
  std::int64_t at = p.at;
  if (p.send >= 0) {
    const auto& s = r_.sends[static_cast<std::size_t>(p.send)];
    if (!p.deferred) at = std::min(at, read_by(s));
    // A waiter's answer, its `T` or a hand-off's `A`, is owed by its
    // wait's end counted from when it was read.
    if (p.deferred && s.acquire) at = std::min(at, read_by(s) + s.wait_ms);
  }
  return (at + 1 + tol_) * 1000 > c.end_us;
}

bool Search::of_key(const Seen& o, const Produced& p) const {
  return o.response && o.response->kind != ResponseKind::error && o.response->key == p.response.key;
}

void Search::explain(State& n, std::uint32_t o, const Produced& p) const {
  n.explained |= std::uint64_t{1} << o;
  if (trace_) n.path += fmt::format(" [{} @{} = obs {}]", format_response(p.response), p.at, o);
}

void Search::match(const State& s, const Produced& p, std::vector<State>& out) const {
  const auto& c = r_.conns[p.conn];
  const bool error = p.response.kind == ResponseKind::error;
  if (r_.cluster) {
    // C8: read no earlier than a millisecond and the allowance before it
    // was produced; any unexplained observation on its connection.
    for (const auto o : c.seen) {
      const auto& seen = r_.seen[o];
      if (has(s.explained, o) || !seen.response || seen.read_us < (p.at - allowance_ - 1) * 1000) continue;
      if (seen.read_us < p.not_before_us) continue;  // C8: never before the send it answers
      // C18: nothing applied before the command that produced it was sent
      // after it was read (both on the tester's clock).
      if (p.after_sent_us > seen.read_us) continue;
      State n = s;
      if (!same(n, p, *seen.response)) continue;
      explain(n, o, p);
      if (p.deferred) {
        // C12: heard past its cause's on-time instant and the tolerance.
        const std::int64_t late_us = seen.from_us - (p.due_ms + 1 + tol_) * 1000;
        if (late_us > 0) n.lateness_ms = std::max(n.lateness_ms, (late_us + 999) / 1000);
      }
      out.push_back(std::move(n));
    }
    // C8: any answer may go unheard; C13: a deferred answer to an
    // operation sent once, on a connection the tester watched, is late by
    // that watch.
    State n = s;
    if (p.deferred && p.send >= 0 && owed_on(p.send, p.conn)) {
      const std::int64_t late_us = c.end_us - (p.due_ms + 1 + tol_) * 1000;
      if (late_us > 0) n.lateness_ms = std::max(n.lateness_ms, (late_us + 999) / 1000);
    }
    if (trace_) n.path += fmt::format(" [{} @{} unheard]", format_response(p.response), p.at);
    out.push_back(std::move(n));
    return;
  }
  // Simple mode. S11: an E matches any unexplained E of its connection.
  // S9: an answer given at once is the first unexplained observation of
  // its key on the connection, or one read in the same millisecond. S10:
  // a deferred answer, any that arrived within the tolerance.
  std::int64_t first_ms = -1;
  bool any_left = false;
  for (const auto o : c.seen) {
    const auto& seen = r_.seen[o];
    if (has(s.explained, o)) continue;
    if (error) {
      if (!seen.response || seen.response->kind != ResponseKind::error) continue;
    } else {
      if (!of_key(seen, p)) continue;
      any_left = true;
      if (first_ms < 0) first_ms = floor_ms(seen.read_us);
      if (p.deferred && seen.from_us > (p.at + 1 + tol_) * 1000) break;
      if (!p.deferred && floor_ms(seen.read_us) != first_ms) break;
    }
    if (seen.read_us < (p.at - 1) * 1000) continue;  // S9, S10: the grid's millisecond
    if (seen.read_us < p.not_before_us) continue;     // S9, S10: never before its request was sent
    State n = s;
    if (!same(n, p, *seen.response)) continue;
    explain(n, o, p);
    out.push_back(std::move(n));
  }
  // S12: unseen only when not owed; an answer given at once only when no
  // observation of its key is left behind it on the connection.
  if (may_be_unseen_simple(p) && (p.deferred || error || !any_left)) {
    out.push_back(s);
    if (trace_) out.back().path += fmt::format(" [{} @{} unseen]", format_response(p.response), p.at);
  }
}

// C13: the tester watched this connection for an answer to this send.
bool Search::owed_on(std::int32_t send, std::uint32_t conn) const {
  const auto& s = r_.sends[static_cast<std::size_t>(send)];
  if (!sent_once(s.op)) return false;
  if (s.conn != conn) return false;
  return r_.conns[conn].end != Conn::End::server;
}

// Applies `produced` one after the other to every state of `states`.
void Search::match_all(std::vector<State> states, const std::vector<Produced>& produced,
                       std::vector<State>& out) const {
  for (const auto& p : produced) {
    std::vector<State> next;
    for (const auto& s : states) {
      match(s, p, next);
      if (next.size() > options_.held_max) {
        held_over_ = true;
        return;
      }
    }
    states = std::move(next);
    if (states.empty()) return;
  }
  for (auto& s : states) out.push_back(std::move(s));
}

// The send a queued waiter came from, and forget it.
std::int32_t Search::take_waiter(State& s, std::uint64_t id) {
  for (auto it = s.waiters.begin(); it != s.waiters.end(); ++it) {
    if (it->id == id) {
      const auto send = static_cast<std::int32_t>(it->send);
      s.waiters.erase(it);
      return send;
    }
  }
  return -1;
}

std::vector<Search::Queued> Search::gone(const std::vector<Queued>& before, const std::vector<Queued>& after) {
  std::vector<Queued> left;
  for (const auto& w : before) {
    if (std::none_of(after.begin(), after.end(), [&](const Queued& a) { return a.id == w.id; })) left.push_back(w);
  }
  return left;
}

void Search::remember_new(State& s, const std::vector<Queued>& before, const std::vector<Queued>& after,
                          std::uint32_t send) {
  for (const auto& w : gone(after, before)) s.waiters.push_back(WaiterOf{w.id, send});
}

// Ties the deferred answer `p` to the waiter it answers, the first of
// `left` of its owner, key and connection (a `T` answers a waiter whose
// deadline has come, an `A` one whose deadline is still ahead: the
// models' own rule), and forgets that waiter; returns its deadline.
std::optional<std::int64_t> Search::tie(State& s, Produced& p, std::uint64_t conn, std::int64_t now,
                                        std::vector<Queued>& left) {
  for (auto it = left.begin(); it != left.end(); ++it) {
    const bool timed_out = it->deadline <= now;
    if (it->owner == p.response.owner && it->key == p.response.key && it->conn == conn &&
        timed_out == (p.response.kind == ResponseKind::timed_out)) {
      const auto deadline = it->deadline;
      p.send = take_waiter(s, it->id);
      left.erase(it);
      return deadline;
    }
  }
  return std::nullopt;
}

}  // namespace lockstep::history::reference
