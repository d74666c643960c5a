// The reference's cluster mode (C1..C18): operations applied once whatever
// sends carried them, retries answered from the session, Expires and
// Timeouts that may come late, and Closes. Beside simple mode's
// (reference_simple.cpp), which the search calls instead.
#include "check/reference_internal.hpp"

#include <fmt/format.h>

namespace lockstep::history::reference {

// C11: a step on `key` at t while its holder or a waiter is past due.
void Search::found_late(State& s, const std::string& key, std::int64_t t) const {
  const auto& keys = s.cluster->model.keys();
  const auto found = keys.find(key);
  if (found == keys.end()) return;
  const auto& st = found->second;
  s.lateness_ms = std::max(s.lateness_ms, t - allowance_ - st.expiry.value);
  for (const auto& w : st.queue) s.lateness_ms = std::max(s.lateness_ms, t - allowance_ - w.deadline.value);
}

// C8: the first send of operation `op` on connection `conn`, when it has
// one: an answer to it there is read no earlier.
std::int64_t Search::op_sent_on(std::int32_t op, std::uint32_t conn) const {
  for (const auto i : r_.ops[static_cast<std::size_t>(op)].sends) {
    if (r_.sends[i].conn == conn) return r_.sends[i].us;
  }
  return 0;
}

// Applies one command, ties its outputs to their causes and matches them.
// C18: the first send of operation `op` (the tester's clock, µs) that no
// `E` answered (C5: a send answered `E` was never applied).
std::int64_t Search::first_sent_us(std::int32_t op) const {
  std::int64_t first = INT64_MAX;
  for (const auto i : r_.ops[static_cast<std::size_t>(op)].sends) {
    if (!r_.sends[i].errored) first = std::min(first, r_.sends[i].us);
  }
  return first;
}

void Search::apply(State n, const cluster::Command& command, const std::string& key, std::int64_t t, std::int32_t send,
                   std::uint64_t echo, std::int64_t hand_off_due, std::vector<State>& out, bool replay) const {
  if (trace_) n.path += fmt::format(" {}:{}{}", t, "ARETC"[command.index()], send);
  found_late(n, key, t);
  const auto old = n.cluster;  // keeps what `before` looks into
  auto& model = own_cluster(n);
  const auto before = queues_of(old->model);
  const auto outputs = model.apply(command);
  const auto after = queues_of(model);
  auto left = gone(before, after);
  std::vector<Produced> produced;
  std::size_t from = 0;
  const bool request = std::holds_alternative<cluster::Acquire>(command) || std::holds_alternative<cluster::Release>(command);
  const Send* asked = request ? &r_.sends[static_cast<std::size_t>(send)] : nullptr;
  if (request) {
    if (!outputs.empty() && slot_of(outputs[0].connection) == asked->conn) {
      Produced own;
      own.response = outputs[0].response;
      own.conn = asked->conn;
      own.at = t;
      own.send = send;
      own.echo = echo;
      own.not_before_us = asked->us;
      produced.push_back(std::move(own));
      from = 1;
    }
    if (std::holds_alternative<cluster::Acquire>(command) && outputs.empty()) {
      remember_new(n, before, after, static_cast<std::uint32_t>(send));
    }
  }
  for (std::size_t i = from; i < outputs.size(); ++i) {
    auto p = deferred_answer(outputs[i], t);
    p.due_ms = hand_off_due;  // C12: a hand-off's cause
    const auto deadline = tie(n, p, outputs[i].connection.value, model.clock().value, left);
    if (deadline && p.response.kind == ResponseKind::timed_out) p.due_ms = *deadline;  // C12: a T's, its deadline
    // C8: never before the send it answers (on this connection), nor
    // before the request that caused it.
    if (p.send >= 0) p.not_before_us = op_sent_on(r_.sends[static_cast<std::size_t>(p.send)].op, p.conn);
    if (request) p.not_before_us = std::max(p.not_before_us, asked->us);
    produced.push_back(std::move(p));
  }
  // C18: what this command produced was read after every operation
  // applied so far was sent. A retry's answer from the session was
  // produced when its operation's outcome was decided: read after every
  // operation applied up to that command was sent.
  for (auto& p : produced) {
    p.after_sent_us = n.latest_sent_us;
    if (p.send < 0) continue;
    const auto op = static_cast<std::size_t>(r_.sends[static_cast<std::size_t>(p.send)].op);
    if (replay) {
      p.after_sent_us = n.decided_sent_us[op];
    } else {
      remember_decided(n, op);
    }
  }
  if (replay) forget_decided(n, static_cast<std::size_t>(r_.sends[static_cast<std::size_t>(send)].op));
  // Dropped by a Close: the session records `T`, which decides the
  // operation's outcome for its retries (C18).
  for (const auto& w : left) {
    const auto dropped = take_waiter(n, w.id);
    if (dropped >= 0) remember_decided(n, static_cast<std::size_t>(r_.sends[static_cast<std::size_t>(dropped)].op));
  }
  match_all({std::move(n)}, produced, out);
}

bool Search::available_cluster(const State& s, std::uint32_t i, std::int64_t t) const {
  const auto& send = r_.sends[i];
  if (has(s.done, i) || send.errored || send.malformed) return false;  // C3
  if (floor_ms(send.us) > t) return false;                              // C2
  // C5: operations sent once, on one connection, in the order sent (a
  // send answered `E` was never applied: it does not count).
  if (sent_once(send.op)) {
    for (const auto j : r_.conns[send.conn].sends) {
      if (j == i) break;
      const auto& earlier = r_.sends[j];
      if (earlier.errored || earlier.malformed || !sent_once(earlier.op)) continue;
      if (!has(s.done, j)) return false;
    }
  }
  return true;
}

// C18: what a retry of `op` answered from the session is bound by, kept
// only while a send of it is still to apply (the states are then the same
// for an operation that cannot be retried any more, whenever it was
// decided).
void Search::remember_decided(State& n, std::size_t op) const {
  if (!retries_done(n, op)) n.decided_sent_us[op] = n.latest_sent_us;
}

void Search::forget_decided(State& n, std::size_t op) const {
  if (retries_done(n, op)) n.decided_sent_us[op] = 0;
}

bool Search::retries_done(const State& n, std::size_t op) const {
  const auto& sends = r_.ops[op].sends;
  return std::all_of(sends.begin(), sends.end(), [&](std::uint32_t j) { return has(n.done, j) || r_.sends[j].errored; });
}

// C5: the operation has one send that no `E` answered.
bool Search::sent_once(std::int32_t op) const {
  const auto& sends = r_.ops[static_cast<std::size_t>(op)].sends;
  return std::count_if(sends.begin(), sends.end(), [&](std::uint32_t j) { return !r_.sends[j].errored; }) == 1;
}

// C16: a `B` answer given at once to send `i`.
void Search::answer_busy(State n, std::uint32_t i, std::int64_t t, std::vector<State>& out, bool replay) const {
  const auto& send = r_.sends[i];
  found_late(n, send.key, t);
  Produced own;
  // C18, as in apply.
  const auto op = static_cast<std::size_t>(send.op);
  if (!replay) remember_decided(n, op);
  own.after_sent_us = n.decided_sent_us[op];
  if (replay) forget_decided(n, op);
  own.response = Response::busy(send.owner, send.key);
  own.conn = send.conn;
  own.at = t;
  own.send = static_cast<std::int32_t>(i);
  own.not_before_us = send.us;
  match_all({std::move(n)}, {own}, out);
}

void Search::cluster_steps(const State& s, std::int64_t t, std::vector<State>& out) const {
  const TimeMs now{t};
  // C2, C4: a send applied; the first of its operation applies it, a
  // later one is a retry the model answers from the session.
  for (std::uint32_t i = 0; i < r_.sends.size(); ++i) {
    if (!available_cluster(s, i, t)) continue;
    const auto& send = r_.sends[i];
    const auto op = static_cast<std::size_t>(send.op);
    const auto conn = ConnectionId{r_.conns[send.conn].id};
    auto session = session_of(send);
    if (send.acquire) {
      State n = s;
      n.done |= 1U << i;
      if (n.outcome[op] == State::busy) {
        answer_busy(std::move(n), i, t, out, true);  // C16: a retry of an acquire answered B
        continue;
      }
      const bool first = n.outcome[op] == State::not_applied;
      n.outcome[op] = State::applied;
      if (first) n.latest_sent_us = std::max(n.latest_sent_us, first_sent_us(send.op));  // C18
      // C16 (a relaxation): a waiting acquire that finds its key held may
      // be answered B, whatever the queue's size.
      if (first && send.wait_ms > 0 && n.cluster->model.keys().contains(send.key)) {
        State b = n;
        b.outcome[op] = State::busy;
        answer_busy(std::move(b), i, t, out);
      }
      apply(std::move(n),
            cluster::Acquire{session, conn, send.key, send.owner, DurationMs{send.lease_ms}, DurationMs{send.wait_ms},
                             now},
            send.key, t, static_cast<std::int32_t>(i), 0, t, out, !first);
    } else {
      for (auto& [named, model_token] : name_token(s, send.token, i)) {
        State n = std::move(named);
        n.done |= 1U << i;
        const bool first = n.outcome[op] == State::not_applied;
        n.outcome[op] = State::applied;
        if (first) n.latest_sent_us = std::max(n.latest_sent_us, first_sent_us(send.op));  // C18
        // C12: a release's hand-off is due at the release's own instant.
        apply(std::move(n), cluster::Release{session, conn, send.key, Token{model_token}, now}, send.key, t,
              static_cast<std::int32_t>(i), send.token, t, out, !first);
      }
    }
  }
  // C6: the Expire of a holder whose lease has run out on the table's
  // clock; the Timeout of a waiter whose deadline has come.
  for (const auto& [key, st] : s.cluster->model.keys()) {
    if (st.expiry.value <= t) {
      State n = s;
      // C10: late past its due instant and the allowance.
      n.lateness_ms = std::max(n.lateness_ms, t - allowance_ - st.expiry.value);
      apply(std::move(n), cluster::Expire{key, st.token, now}, key, t, -1, 0, st.expiry.value, out);
    }
    for (const auto& w : st.queue) {
      if (w.deadline.value > t) continue;
      State n = s;
      n.lateness_ms = std::max(n.lateness_ms, t - allowance_ - w.deadline.value);  // C10
      apply(std::move(n), cluster::Timeout{key, cluster::WaiterId{w.id}, now}, key, t, -1, 0, w.deadline.value, out);
    }
  }
  // C7: a connection that ended may have its waiters dropped.
  for (std::uint32_t c = 0; c < r_.conns.size(); ++c) {
    const auto& conn = r_.conns[c];
    if (conn.end == Conn::End::open || t < close_from(conn)) continue;
    bool has_waiter = false;
    for (const auto& [key, st] : s.cluster->model.keys()) {
      for (const auto& w : st.queue) has_waiter = has_waiter || w.connection.value == conn.id;
    }
    if (!has_waiter) continue;
    apply(s, cluster::Close{ConnectionId{conn.id}, now}, "", t, -1, 0, t, out);
  }
}

cluster::Session Search::session_of(const Send& send) {
  // The fields after the request's own, when there are two more.
  std::vector<std::string> f;
  std::string cur;
  for (const char ch : send.line) {
    if (ch == ' ') {
      f.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  f.push_back(cur);
  const std::size_t own = send.acquire ? 5 : 3;
  if (f.size() != own + 2) return {};
  return cluster::Session{f[own], std::stoull(f[own + 1])};
}

}  // namespace lockstep::history::reference
