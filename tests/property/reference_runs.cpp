// The generated runs of reference_runs.hpp. Each simulates a correct target
// step by step with the models of model/ and records what a tester on one
// clock would see: sends, answers read a little after they were produced,
// closes. Times are microseconds; instant n is the millisecond [n, n+1).
#include "tests/property/reference_runs.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <variant>

#include <fmt/format.h>

#include "model/cluster_model.hpp"
#include "check/reference.hpp"
#include "model/model.hpp"

namespace lockstep::testing {
namespace {

using history::EventKind;

// RapidCheck's kNominalSize: at this size inRange covers its whole range.
constexpr int full_size = 100;

void sort_events(history::History& h) {
  std::stable_sort(h.events.begin(), h.events.end(),
                   [](const history::Event& a, const history::Event& b) { return a.t_us < b.t_us; });
}

Limits small_limits(std::size_t waiters_per_key) {
  Limits limits;
  limits.max_keys = 8;
  limits.max_waiters_per_key = waiters_per_key;
  limits.max_waiters = 64;
  limits.max_lease_ms = DurationMs{50};
  limits.max_wait_ms = DurationMs{50};
  return limits;
}

}  // namespace

rc::Gen<std::vector<RunStep>> gen_steps(const StepRanges& ranges) {
  const auto step = rc::gen::apply(
      [](int kind, int conn, int key, int owner, int lease, int wait, int delay, int read_us, int gap_us, int pick) {
        return RunStep{kind, conn, key, owner, lease, wait, delay, read_us, gap_us, pick};
      },
      rc::gen::inRange(0, 8), rc::gen::inRange(0, 4), rc::gen::inRange(0, 2), rc::gen::inRange(0, 3),
      rc::gen::inRange(1, ranges.lease_max + 1), rc::gen::inRange(1, ranges.wait_max + 1), rc::gen::inRange(0, 3),
      rc::gen::inRange(0, 1000), rc::gen::inRange(0, ranges.gap_max_us + 1), rc::gen::inRange(0, 12));
  return rc::gen::resize(full_size, rc::gen::mapcat(rc::gen::inRange(1, ranges.count_max + 1), [step](int count) {
                           return rc::gen::container<std::vector<RunStep>>(static_cast<std::size_t>(count), step);
                         }));
}

rc::Gen<SimpleSetting> gen_simple_setting() {
  return rc::gen::apply(
      [](std::int64_t tolerance, std::int64_t sweep, std::uint64_t first_token, bool within) {
        return SimpleSetting{tolerance, sweep, first_token, within};
      },
      rc::gen::element<std::int64_t>(1, 2, 3), rc::gen::element<std::int64_t>(2, 3, 5, 8),
      rc::gen::element<std::uint64_t>(1, 2, 3), rc::gen::element(false, false, true));
}

rc::Gen<ClusterSetting> gen_cluster_setting(bool trylocks_only) {
  return rc::gen::apply(
      [trylocks_only](std::int64_t tolerance, std::int64_t allowance, bool bounded, std::int64_t max, bool per_client) {
        return ClusterSetting{tolerance, allowance, bounded ? max : -1, per_client, trylocks_only};
      },
      rc::gen::element<std::int64_t>(1, 2, 3), rc::gen::element<std::int64_t>(0, 0, 2, 4),
      rc::gen::element(false, false, true), rc::gen::element<std::int64_t>(0, 1, 3, 8), rc::gen::element(false, true));
}

// ---- simple mode ------------------------------------------------------------------

namespace {

class SimpleRun {
 public:
  explicit SimpleRun(const SimpleSetting& setting) : setting_(setting), half_tol_us_(setting.tolerance_ms * 500) {
    h_.header.limits = small_limits(2);
    h_.header.limits.sweep_ms = DurationMs{setting.sweep_ms};
    h_.header.tolerance_ms = setting.tolerance_ms;
    if (setting.handled_within) h_.header.handled_within_ms = delay_max_ms;
  }

  // kind 0..2: an acquire that may wait; 3: one that does not; 4, 5: a
  // release; 6: the tester closes the connection; 7: a malformed line.
  void step(const RunStep& s) {
    now_us_ += s.gap_us;
    const auto conn = static_cast<std::uint32_t>(s.conn + 1);
    if (closed_.contains(conn)) return;
    std::string line;
    if (s.kind <= 3) {
      line = fmt::format("A k{} o{} {} {}", s.key, s.owner, s.lease_ms, s.kind == 3 ? 0 : s.wait_ms);
    } else if (s.kind <= 5) {
      // A token seen, or one nobody holds.
      const auto token = tokens_.empty() || s.pick == 0 ? std::uint64_t{9} : tokens_[static_cast<std::size_t>(s.pick) % tokens_.size()];
      line = fmt::format("R k{} {}", s.key, token);
    } else if (s.kind == 6) {
      if (!opened_.contains(conn)) return;
      close(conn, s);
      return;
    } else {
      line = fmt::format("A k{} o{}", s.key, s.owner);
    }
    if (sends_ >= history::reference_requests_max) return;
    ++sends_;
    if (opened_.insert(conn).second) event(EventKind::connect, conn, now_us_);
    event(EventKind::send, conn, now_us_, line);
    // Handled at an instant at or after the send (S3), in the connection's
    // order (S4), at most delay_max_ms late.
    const auto at = std::max(now_us_ / 1000 + s.delay_ms % (delay_max_ms + 1), last_at_[conn]);
    last_at_[conn] = at;
    pending_.push_back(Input{at, pending_.size(), conn, line, std::max(now_us_, at * 1000), s.read_us});
    // The tokens granted so far, for releases; the simulation runs after
    // the sends, so it gives the tokens the model issues in order.
    if (s.kind <= 3) tokens_.push_back(setting_.first_token + tokens_.size());
  }

  history::History finish() {
    std::stable_sort(pending_.begin(), pending_.end(),
                     [](const Input& a, const Input& b) { return a.at < b.at; });
    Model model(h_.header.limits, Token{setting_.first_token});
    std::int64_t last = 0;
    for (const auto& input : pending_) last = std::max(last, input.at);
    last += 12 + setting_.tolerance_ms;  // every wait (at most 9 ms) ends
    // The sweeps fall at the first event's instant plus multiples of the
    // period: the phase the reference tries first (any phase would do; this
    // one spares the reference the others on a run that conforms).
    const std::int64_t first_ms = h_.events.empty() ? 0 : h_.events.front().t_us / 1000;
    const auto model_time = [&](std::int64_t t) { return TimeMs{t - first_ms + setting_.sweep_ms}; };
    std::size_t next = 0;
    for (std::int64_t t = first_ms; t <= last; ++t) {
      Outputs due;
      model.advance(model_time(t), due);
      deliver(due, t * 1000, 0, 0);
      for (; next < pending_.size() && pending_[next].at == t; ++next) {
        const auto& input = pending_[next];
        Outputs out;
        if (input.line.empty()) {
          model.on_close(ConnectionId{input.conn}, model_time(t), out);
        } else {
          model.on_line(ConnectionId{input.conn}, input.line, model_time(t), out);
        }
        // The first answer on the request's own connection is its own
        // (given at once); the rest are hand-offs it caused.
        const bool own = !out.empty() && out.front().connection.value == input.conn;
        deliver(out, input.handled_us, input.read_us, own ? 1 : 0);
      }
    }
    sort_events(h_);
    return std::move(h_);
  }

 private:
  static constexpr std::int64_t delay_max_ms = 2;

  struct Input {
    std::int64_t at;
    std::size_t order;
    std::uint32_t conn;
    std::string line;  // empty: a close
    std::int64_t handled_us;
    int read_us;
  };

  void event(EventKind kind, std::uint32_t conn, std::int64_t at_us, std::string line = {}) {
    h_.events.push_back(history::Event{at_us, kind, conn, std::move(line)});
  }

  // The tester closes after every answer given at once on the connection
  // arrived (so none it was owed is lost); the server drops its waiters
  // within the tolerance of reading the close (S7).
  void close(std::uint32_t conn, const RunStep& s) {
    const auto close_us = std::max(now_us_, (last_at_[conn] + 1) * 1000 + half_tol_us_ + 1);
    event(EventKind::close, conn, close_us);
    closed_.insert(conn);
    close_us_[conn] = close_us;
    const auto at = std::max(close_us / 1000 + s.delay_ms % (setting_.tolerance_ms + 1), last_at_[conn]);
    pending_.push_back(Input{at, pending_.size(), conn, {}, close_us, 0});
  }

  // Answers produced at `from_us`: the first `own` given at once, read
  // within half the tolerance; each arrives after what its connection
  // received before (in the order produced).
  void deliver(const Outputs& outputs, std::int64_t from_us, int read_us, std::size_t own) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const auto conn = static_cast<std::uint32_t>(outputs[i].connection.value);
      const std::int64_t delay = (i < own ? read_us : read_us * 7 + 311 * static_cast<int>(i)) % (half_tol_us_ + 1);
      const auto read = std::max(last_read_[conn], from_us + delay);
      if (close_us_.contains(conn) && read >= close_us_[conn]) continue;  // the tester no longer reads it
      last_read_[conn] = read;
      event(EventKind::recv, conn, read, format_response(outputs[i].response));
    }
  }

  SimpleSetting setting_;
  std::int64_t half_tol_us_;
  history::History h_;
  std::int64_t now_us_ = 1000;
  std::size_t sends_ = 0;
  std::vector<Input> pending_;
  std::vector<std::uint64_t> tokens_;
  std::set<std::uint32_t> opened_, closed_;
  std::map<std::uint32_t, std::int64_t> last_at_, last_read_, close_us_;
};

}  // namespace

history::History simple_run(const std::vector<RunStep>& steps, const SimpleSetting& setting) {
  SimpleRun run(setting);
  for (const auto& s : steps) run.step(s);
  return run.finish();
}

// ---- cluster mode -----------------------------------------------------------------

namespace {

class ClusterRun {
 public:
  explicit ClusterRun(const ClusterSetting& setting) : setting_(setting), model_(small_limits(8), Token{1}, {}) {
    h_.header.mode = history::Mode::cluster;
    h_.header.limits = small_limits(8);
    h_.header.tolerance_ms = setting.tolerance_ms;
    h_.header.clock_allowance_ms = setting.allowance_ms;
    h_.header.max_lateness_ms = setting.max_lateness_ms;
  }

  // Each step first lets time pass: the leader, unless this step it is
  // late (kind 7), applies the requests that reached it (each some ms after
  // it was sent) and proposes the Expires and Timeouts due. Then kind 0..2:
  // a client sends a new request (kind 2: one that does not wait), or its
  // pending one again on a new connection when its connection ended; 3:
  // nothing more; 4: the client gives up and sends again on a new
  // connection, at once or at its next step of kind 0..2; 5: the node closes the connection; 6: the node answers
  // `E not-leader` and the client sends again on a new connection.
  void step(const RunStep& s) {
    now_us_ += s.gap_us;
    if (s.kind != 7) {
      apply_arrived(s);
      advance_to(now_us_ / 1000);
    }
    auto& c = clients_[static_cast<std::size_t>(s.owner)];
    switch (s.kind) {
      case 0:
      case 1:
      case 2:
        if (c.pending) {
          if (c.conn == 0) send(c, s);
          return;
        }
        if (sends_ >= history::reference_requests_max) return;
        request(c, s);
        send(c, s);
        return;
      case 4:
        if (!c.pending || c.conn == 0) return;
        event(EventKind::close, c.conn);
        open_.erase(c.conn);
        c.conn = 0;
        // Sometimes the client sends again only at its next request step,
        // long after: its outcome, decided meanwhile, is heard late on the
        // retry (a retry's own answer, never late: C4, C12).
        if (s.pick < 10) send(c, s);
        return;
      case 5:
        if (c.conn == 0) return;
        event(EventKind::eof, c.conn);
        if (s.pick % 2 == 0) deliver(model_.apply(cluster::Close{ConnectionId{c.conn}, TimeMs{now_us_ / 1000}}), 0);
        open_.erase(c.conn);
        c.conn = 0;
        return;
      case 6:
        if (!c.pending || c.conn == 0 || c.applied_on == c.conn) return;
        event(EventKind::recv, c.conn, "E not-leader");
        c.conn = 0;  // it reads no more there; it sends again on a new one
        send(c, s);
        return;
      default:
        return;
    }
  }

  history::History finish() {
    // The leader on time from here on, until every wait and lease ended.
    for (int i = 0; i < 8; ++i) {
      now_us_ += 1000;
      apply_arrived(RunStep{});
      advance_to(now_us_ / 1000);
    }
    for (const auto id : open_) event(EventKind::close, id);
    sort_events(h_);
    return std::move(h_);
  }

 private:
  struct Client {
    std::uint64_t seq = 0;
    bool pending = false;
    std::int64_t arrives_us = 0;  // when its last send reaches the leader
    cluster::Command command;
    std::string line;
    std::uint32_t conn = 0;        // where it reads now
    std::uint32_t applied_on = 0;  // the connection its pending request was applied from
    std::vector<std::pair<std::string, std::uint64_t>> tokens;
  };

  void request(Client& c, const RunStep& s) {
    const auto index = static_cast<std::size_t>(&c - clients_.data());
    const auto client = fmt::format("c{}", index);
    ++c.seq;
    if (s.pick % 3 == 0 && !c.tokens.empty()) {
      const auto& [k, token] = c.tokens[static_cast<std::size_t>(s.pick) % c.tokens.size()];
      c.line = fmt::format("R {} {} {} {}", k, token, client, c.seq);
      c.command = cluster::Release{cluster::Session{client, c.seq}, {}, k, Token{token}, {}};
    } else {
      const auto key = fmt::format("k{}", s.key);
      const auto owner = setting_.owner_per_client ? client : fmt::format("{}s{}", client, c.seq);
      const int wait = s.kind == 2 || setting_.trylocks_only ? 0 : s.wait_ms;
      c.line = fmt::format("A {} {} {} {} {} {}", key, owner, s.lease_ms, wait, client, c.seq);
      c.command = cluster::Acquire{cluster::Session{client, c.seq}, {}, key, owner, DurationMs{s.lease_ms},
                                   DurationMs{wait}, {}};
    }
    c.pending = true;
  }

  void event(EventKind kind, std::uint32_t conn, std::string line = {}, std::int64_t at_us = -1) {
    const auto at = at_us < 0 ? now_us_ : at_us;
    if (kind == EventKind::close || kind == EventKind::eof) {
      // Nothing is read on a connection after it ended: an answer on its
      // way then goes unheard.
      std::erase_if(h_.events, [&](const history::Event& e) {
        return e.conn == conn && e.kind == EventKind::recv && e.t_us >= at;
      });
    }
    h_.events.push_back(history::Event{at, kind, conn, std::move(line)});
  }

  // The pending requests that reached the leader, applied in the order
  // they arrived, each stamped up to the allowance after.
  void apply_arrived(const RunStep& s) {
    std::vector<Client*> arrived;
    for (auto& c : clients_) {
      if (c.pending && c.conn != 0 && c.applied_on != c.conn && c.arrives_us <= now_us_) arrived.push_back(&c);
    }
    std::stable_sort(arrived.begin(), arrived.end(),
                     [](const Client* a, const Client* b) { return a->arrives_us < b->arrives_us; });
    for (auto* c : arrived) {
      auto command = c->command;
      const TimeMs stamp{c->arrives_us / 1000 + s.delay_ms % (setting_.allowance_ms + 1)};
      std::visit(
          [&](auto& r) {
            using R = std::decay_t<decltype(r)>;
            if constexpr (std::is_same_v<R, cluster::Acquire> || std::is_same_v<R, cluster::Release>) {
              r.connection = ConnectionId{c->conn};
              r.now = stamp;
            }
          },
          command);
      c->applied_on = c->conn;
      deliver(model_.apply(command), s.read_us);
    }
  }

  void send(Client& c, const RunStep& s) {
    c.arrives_us = now_us_ + s.delay_ms * 700;
    if (c.conn == 0) {
      if (next_conn_ > history::reference_connections_max || sends_ >= history::reference_requests_max) {
        c.pending = false;  // given up
        return;
      }
      c.conn = next_conn_++;
      open_.insert(c.conn);
      event(EventKind::connect, c.conn);
    }
    ++sends_;
    event(EventKind::send, c.conn, c.line);
  }

  void deliver(const Outputs& outputs, int read_us) {
    for (const auto& out : outputs) {
      const auto conn = static_cast<std::uint32_t>(out.connection.value);
      if (!open_.contains(conn)) continue;
      const auto read = now_us_ + read_us % (setting_.tolerance_ms * 1000 + 1);
      event(EventKind::recv, conn, format_response(out.response), read);
      for (auto& c : clients_) {
        if (c.conn != conn || !c.pending) continue;
        if (out.response.kind == ResponseKind::granted) c.tokens.emplace_back(out.response.key, out.response.token.value);
        c.pending = false;
        c.applied_on = 0;
      }
    }
  }

  // The leader's clock reached `ms`: it proposes the Timeouts and Expires
  // due.
  void advance_to(std::int64_t ms) {
    std::vector<cluster::Command> due;
    for (const auto& [key, st] : model_.keys()) {
      for (const auto& w : st.queue) {
        if (w.deadline.value <= ms) due.push_back(cluster::Timeout{key, cluster::WaiterId{w.id}, TimeMs{ms}});
      }
      if (st.expiry.value <= ms) due.push_back(cluster::Expire{key, st.token, TimeMs{ms}});
    }
    for (const auto& command : due) deliver(model_.apply(command), 300);
  }

  ClusterSetting setting_;
  model::ClusterModel model_;
  history::History h_;
  std::array<Client, 3> clients_{};
  std::int64_t now_us_ = 1000;
  std::uint32_t next_conn_ = 1;
  std::size_t sends_ = 0;
  std::set<std::uint32_t> open_;
};

}  // namespace

history::History cluster_run(const std::vector<RunStep>& steps, const ClusterSetting& setting) {
  ClusterRun run(setting);
  for (const auto& s : steps) run.step(s);
  return run.finish();
}

// ---- mutations --------------------------------------------------------------------

rc::Gen<Mutation> gen_mutation() {
  return rc::gen::resize(full_size, rc::gen::apply([](int kind, int which, int amount) { return Mutation{kind, which, amount}; },
                                                   rc::gen::element(0, 0, 1, 2, 3, 4), rc::gen::inRange(0, 40),
                                                   rc::gen::inRange(-6000, 6000)));
}

namespace {

// Another answer of the same kind of request: A<->T, R<->N, a token moved.
std::string changed(const std::string& line, int which) {
  std::vector<std::string> f;
  std::string cur;
  for (const char c : line) {
    if (c == ' ') {
      f.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  f.push_back(cur);
  if (f[0] == "A" && f.size() == 4) {
    if (which % 2 == 0) return fmt::format("T {} {}", f[2], f[3]);
    return fmt::format("A {} {} {}", std::stoull(f[1]) + 1, f[2], f[3]);
  }
  if (f[0] == "T" && f.size() == 3) {
    if (which % 2 == 0) return fmt::format("B {} {}", f[1], f[2]);
    return fmt::format("A {} {} {}", 1 + which % 5, f[1], f[2]);
  }
  if (f[0] == "B" && f.size() == 3) return fmt::format("T {} {}", f[1], f[2]);
  if (f[0] == "R" && f.size() == 3) return fmt::format("N {} {}", f[1], f[2]);
  if (f[0] == "N" && f.size() == 3) return fmt::format("R {} {}", f[1], f[2]);
  return line;
}

}  // namespace

void mutate(history::History& h, const Mutation& m) {
  std::vector<std::size_t> recvs;
  for (std::size_t i = 0; i < h.events.size(); ++i) {
    if (h.events[i].kind == EventKind::recv) recvs.push_back(i);
  }
  if (m.kind == 0 || recvs.empty()) return;
  const auto at = recvs[static_cast<std::size_t>(m.which) % recvs.size()];
  auto& e = h.events[at];
  if (m.kind == 1) e.line = changed(e.line, m.which);
  if (m.kind == 3) {
    h.events.erase(h.events.begin() + static_cast<std::ptrdiff_t>(at));
    return;
  }
  if (m.kind == 2 || m.kind == 4) {
    // Moved, or heard twice: read while the tester watches its connection,
    // after it opened, before it ended.
    std::int64_t open_us = e.t_us, end_us = INT64_MAX;
    for (const auto& other : h.events) {
      if (other.conn != e.conn) continue;
      if (other.kind == EventKind::connect) open_us = std::min(open_us, other.t_us);
      if (other.kind == EventKind::close || other.kind == EventKind::eof) end_us = std::min(end_us, other.t_us - 1);
    }
    auto moved = e;
    moved.t_us = std::clamp<std::int64_t>(e.t_us + m.amount_us, open_us, std::max(open_us, end_us));
    moved.after_us = -1;
    if (m.kind == 2) {
      e = moved;
    } else {
      h.events.push_back(moved);
    }
    sort_events(h);
  }
}

}  // namespace lockstep::testing
