// The reference's simple mode (S1..S15): what is due at an instant (the
// model's timeouts, then its sweep), the requests handled in the order
// sent, and the closes. Beside cluster mode's (reference_cluster.cpp),
// which the search calls instead.
#include "check/reference_internal.hpp"

#include <fmt/format.h>

namespace lockstep::history::reference {

// An answer the model gave at t to a request other than the one it was
// handling (both models).
Search::Produced Search::deferred_answer(const Outbound& out, std::int64_t t) const {
  Produced p;
  p.response = out.response;
  p.conn = slot_of(out.connection);
  p.at = t;
  p.deferred = true;
  return p;
}

// The deferred answers of one call of the model, each tied to the waiter
// it answers.
std::vector<Search::Produced> Search::deferred_simple(State& s, const std::vector<Queued>& before,
                                                     const Outputs& outputs, std::size_t from, std::int64_t t) const {
  std::vector<Produced> out;
  auto left = gone(before, queues_of(s.simple->model));
  for (std::size_t i = from; i < outputs.size(); ++i) {
    auto p = deferred_answer(outputs[i], t);
    tie(s, p, outputs[i].connection.value, s.simple->model.now().value, left);
    // S10: never read before the request it answers was sent.
    if (p.send >= 0) p.not_before_us = r_.sends[static_cast<std::size_t>(p.send)].us;
    out.push_back(std::move(p));
  }
  return out;
}

// Whether anything happens to `s` at t: something due, or a step.
bool Search::busy(const State& s, std::int64_t t) const {
  if (!r_.cluster) {
    const auto due = s.simple->model.next_due();
    if (due && *due <= model_time(t)) return true;
    if (holds_expired(s, t)) return true;  // noted in expired_at_ (run)
  }
  return any_step(s, t);
}

// Whether a sweep at t would change `s`: a key's holder has expired.
bool Search::holds_expired(const State& s, std::int64_t t) const {
  const auto& keys = s.simple->model.keys();
  return std::any_of(keys.begin(), keys.end(), [&](const auto& entry) { return entry.second.expiry <= model_time(t); });
}

// S4, S6: what is due at t: the model's timeouts, then its sweep.
void Search::fire_due(State n, std::int64_t t, std::vector<State>& out) const {
  const auto due = n.simple->model.next_due();
  if (!due || *due > model_time(t)) {
    out.push_back(std::move(n));  // nothing: the model's clock may stay behind (model_key)
    return;
  }
  const auto old = n.simple;  // `before` points into its model
  const auto before = queues_of(old->model);
  auto& model = own_simple(n);
  Outputs outputs;
  model.advance(model_time(t), outputs);
  auto produced = deferred_simple(n, before, outputs, 0, t);
  match_all({std::move(n)}, produced, out);
}

// Whether some step is available to `s` at t (simple_steps and
// cluster_steps would give something).
bool Search::any_step(const State& s, std::int64_t t) const {
  for (std::uint32_t i = 0; i < r_.sends.size(); ++i) {
    if (r_.cluster ? available_cluster(s, i, t) : available_simple(s, i, t)) return true;
  }
  if (r_.cluster) {
    for (const auto& [key, st] : s.cluster->model.keys()) {
      if (st.expiry.value <= t) return true;
      for (const auto& w : st.queue) {
        if (w.deadline.value <= t) return true;
      }
    }
    for (const auto& conn : r_.conns) {
      if (conn.end == Conn::End::open || t < close_from(conn)) continue;
      for (const auto& [key, st] : s.cluster->model.keys()) {
        for (const auto& w : st.queue) {
          if (w.connection.value == conn.id) return true;
        }
      }
    }
    return false;
  }
  for (std::uint32_t c = 0; c < r_.conns.size(); ++c) {
    const auto& conn = r_.conns[c];
    if (conn.end == Conn::End::open || has(s.closed, c)) continue;
    const auto [lo, hi] = close_window(conn);
    if (t >= lo && t <= hi) return true;
  }
  return false;
}

bool Search::available_simple(const State& s, std::uint32_t i, std::int64_t t) const {
  const auto& send = r_.sends[i];
  if (has(s.done, i) || has(s.closed, send.conn)) return false;
  if (floor_ms(send.us) > t) return false;  // S3
  for (const auto j : r_.conns[send.conn].sends) {  // S4: in the order sent
    if (j == i) break;
    if (!has(s.done, j)) return false;
  }
  return true;
}

// S7: when the server drops a closed connection's waiters.
std::pair<std::int64_t, std::int64_t> Search::close_window(const Conn& c) const {
  if (c.end == Conn::End::tester) return {floor_ms(c.end_us), floor_ms(c.end_us) + 1 + tol_};
  return {floor_ms(c.open_us), floor_ms(c.end_us + 1000)};
}

void Search::simple_steps(const State& s, std::int64_t t, std::vector<State>& out) const {
  for (std::uint32_t i = 0; i < r_.sends.size(); ++i) {
    if (!available_simple(s, i, t)) continue;
    const auto& send = r_.sends[i];
    std::vector<Named> names;
    if (!send.malformed && !send.acquire) {
      names = name_token(s, send.token, i);  // S13
    } else {
      names.push_back(Named{s, 0});
    }
    for (auto& [named, model_token] : names) {
      State n = std::move(named);
      n.done |= 1U << i;
      if (trace_) n.path += fmt::format(" {}:send{}", t, i);
      std::string line = send.line;
      if (!send.malformed && !send.acquire) line = fmt::format("R {} {}", send.key, model_token);
      auto& model = own_simple(n);
      const auto before = queues_of(s.simple->model);
      Outputs outputs;
      model.on_line(ConnectionId{r_.conns[send.conn].id}, line, model_time(t), outputs);
      std::vector<Produced> produced;
      std::size_t from = 0;
      if (send.acquire && outputs.empty()) {
        remember_new(n, before, queues_of(model), i);  // queued (simple mode point 4)
      } else if (!outputs.empty()) {
        Produced own;
        own.response = outputs[0].response;
        own.conn = send.conn;
        own.at = t;
        own.send = static_cast<std::int32_t>(i);
        own.echo = send.token;
        own.not_before_us = send.us;
        produced.push_back(std::move(own));
        from = 1;
      }
      auto handed = deferred_simple(n, before, outputs, from, t);
      // S10: nor before the request that caused it was sent.
      for (auto& p : handed) p.not_before_us = std::max(p.not_before_us, send.us);
      produced.insert(produced.end(), handed.begin(), handed.end());
      match_all({std::move(n)}, produced, out);
    }
  }
  // S7, S8: a close takes effect after its connection's requests.
  for (std::uint32_t c = 0; c < r_.conns.size(); ++c) {
    const auto& conn = r_.conns[c];
    if (conn.end == Conn::End::open || has(s.closed, c)) continue;
    const auto [lo, hi] = close_window(conn);
    if (t < lo || t > hi) continue;
    if (std::any_of(conn.sends.begin(), conn.sends.end(), [&](std::uint32_t i) { return !has(s.done, i); })) continue;
    bool may = true;
    for (const auto& [key, st] : s.simple->model.keys()) {
      for (const auto& w : st.queue) {
        if (w.connection.value == conn.id && !may_drop(s, w.queued_order, instant_of(w.deadline), t)) may = false;
      }
    }
    if (!may) continue;
    State n = s;
    n.closed |= 1U << c;
    if (trace_) n.path += fmt::format(" {}:close{}", t, c);
    auto& model = own_simple(n);
    const auto before = queues_of(s.simple->model);
    Outputs ignored;
    model.on_close(ConnectionId{conn.id}, model_time(t), ignored);
    for (const auto& w : gone(before, queues_of(model))) take_waiter(n, w.id);
    out.push_back(std::move(n));
  }
}

// S8: a close at `at` drops a waiter only before its `T` was owed.
bool Search::may_drop(const State& s, std::uint64_t id, std::int64_t deadline, std::int64_t at) const {
  for (const auto& w : s.waiters) {
    if (w.id != id) continue;
    const auto& send = r_.sends[w.send];
    const std::int64_t queued = deadline - send.wait_ms;
    return std::min(queued, read_by(send)) + send.wait_ms + 1 + tol_ > at;
  }
  return true;
}

}  // namespace lockstep::history::reference
