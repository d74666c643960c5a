// The checker held to the reference (model/history/reference.hpp): on small
// generated histories, both modes, the two must give the same verdict, and
// in cluster mode, when the history conforms, the same least lateness to the
// millisecond. The reference is slow and plainly follows the numbered rules
// of docs/protocol.md; the checker is fast and clever; a disagreement is a
// bug in one of them, which RapidCheck shrinks to a minimal history and
// prints in the history file format (replay it with `lockstep check-history
// FILE` and `--reference`).
//
// Histories come from runs of the models (model/model.hpp, the cluster's
// model/cluster_model.hpp) with random delays, on a small grid (at most 4
// connections, 2 keys, 12 requests, leases and waits of a few ms), then
// often mutated: one answer changed, moved or dropped. A simple run has
// closes by the tester and answers read late; a cluster run has sessions,
// retries on new connections, closes by the tester and by a node, `E`
// answers, and Expires and Timeouts applied late or early within the clock
// allowance. A verdict of `unknown` (a budget ran out) is counted and must
// stay rare. The count of cases comes from RC_PARAMS (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/cluster_model.hpp"
#include "model/history/checker.hpp"
#include "model/history/history.hpp"
#include "model/history/reference.hpp"
#include "model/model.hpp"

namespace lockstep::testing {
namespace {

using history::EventKind;

// One thing a generated run does; the fields a kind does not use are ignored.
struct Step {
  int kind = 0;  // simple: 0 acquire, 1 release, 2 close, 3 wait; cluster: see ClusterRun::run
  int conn = 0, key = 0, owner = 0;
  int lease_ms = 5, wait_ms = 0;
  int delay = 0;  // ms before the server acts on it
  int read_us = 0;  // how long its answer takes to be read
  int gap_us = 0;   // time before the step
  int pick = 0;     // which token, which client
};

rc::Gen<Step> gen_step() {
  return rc::gen::apply(
      [](int kind, int conn, int key, int owner, int lease, int wait, int delay, int read_us, int gap_us, int pick) {
        return Step{kind, conn, key, owner, lease, wait, delay, read_us, gap_us, pick};
      },
      rc::gen::weightedElement<int>({{5, 0}, {3, 1}, {1, 2}, {2, 3}, {1, 4}, {1, 5}}), rc::gen::inRange(0, 4),
      rc::gen::inRange(0, 2), rc::gen::inRange(0, 3), rc::gen::inRange(1, 25),
      rc::gen::weightedElement<int>({{2, 0}, {1, 3}, {2, 8}, {1, 20}}), rc::gen::inRange(0, 3),
      rc::gen::inRange(0, 2500), rc::gen::inRange(0, 6000), rc::gen::inRange(0, 8));
}

// One answer changed, moved or dropped (or none).
struct Mutation {
  int kind = 0;  // 0 none, 1 change, 2 move, 3 drop
  int which = 0;
  int amount_us = 0;
};

rc::Gen<Mutation> gen_mutation() {
  return rc::gen::apply([](int kind, int which, int amount) { return Mutation{kind, which, amount}; },
                        rc::gen::weightedElement<int>({{2, 0}, {1, 1}, {1, 2}, {1, 3}}), rc::gen::inRange(0, 40),
                        rc::gen::inRange(-20000, 20000));
}

void sort_events(history::History& h) {
  std::stable_sort(h.events.begin(), h.events.end(),
                   [](const history::Event& a, const history::Event& b) { return a.t_us < b.t_us; });
}

// Another answer of the same kind of request: A<->T, R<->N, a token moved.
std::string changed(const std::string& line, int which) {
  const auto fields = [&] {
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
    return f;
  }();
  if (fields[0] == "A" && fields.size() == 4) {
    if (which % 2 == 0) return fmt::format("T {} {}", fields[2], fields[3]);
    return fmt::format("A {} {} {}", std::stoull(fields[1]) + 1, fields[2], fields[3]);
  }
  if (fields[0] == "T" && fields.size() == 3) {
    if (which % 2 == 0) return fmt::format("B {} {}", fields[1], fields[2]);
    return fmt::format("A {} {} {}", 1 + which % 5, fields[1], fields[2]);
  }
  if (fields[0] == "B" && fields.size() == 3) return fmt::format("T {} {}", fields[1], fields[2]);
  if (fields[0] == "R" && fields.size() == 3) return fmt::format("N {} {}", fields[1], fields[2]);
  if (fields[0] == "N" && fields.size() == 3) return fmt::format("R {} {}", fields[1], fields[2]);
  return line;
}

void mutate(history::History& h, const Mutation& m) {
  std::vector<std::size_t> recvs;
  for (std::size_t i = 0; i < h.events.size(); ++i) {
    if (h.events[i].kind == EventKind::recv) recvs.push_back(i);
  }
  if (m.kind == 0 || recvs.empty()) return;
  auto& e = h.events[recvs[static_cast<std::size_t>(m.which) % recvs.size()]];
  if (m.kind == 1) e.line = changed(e.line, m.which);
  if (m.kind == 2) {
    e.t_us = std::max<std::int64_t>(0, e.t_us + m.amount_us);
    e.after_us = -1;
    sort_events(h);
  }
  if (m.kind == 3) h.events.erase(h.events.begin() + static_cast<std::ptrdiff_t>(recvs[static_cast<std::size_t>(m.which) % recvs.size()]));
}

// ---- simple mode: the model with random delays -----------------------------------

history::History simple_run(const std::vector<Step>& steps, std::int64_t tolerance_ms, std::int64_t sweep_ms,
                            std::uint64_t first_token) {
  history::History h;
  Limits limits;
  limits.max_keys = 8;
  limits.max_waiters_per_key = 2;
  limits.max_waiters = 64;
  limits.sweep_ms = DurationMs{sweep_ms};
  limits.max_lease_ms = DurationMs{50};
  limits.max_wait_ms = DurationMs{50};
  h.header.limits = limits;
  h.header.tolerance_ms = tolerance_ms;
  // The inputs as the server handles them: (instant, order, what).
  struct Input {
    std::int64_t at;
    std::size_t order;
    std::uint32_t conn;
    std::string line;  // empty: a close
    int read_us;
  };
  std::vector<Input> inputs;
  std::int64_t now_us = 1000;
  std::map<std::uint32_t, std::int64_t> last_at;  // per connection: its last input's instant
  std::set<std::uint32_t> opened, closed;
  std::map<std::uint32_t, std::int64_t> close_us;  // when the tester closed it
  std::size_t requests = 0;
  std::vector<std::uint64_t> tokens{first_token, first_token + 1, first_token + 2};
  for (const auto& s : steps) {
    now_us += s.gap_us;
    const auto conn = static_cast<std::uint32_t>(s.conn + 1);
    if (closed.contains(conn)) continue;
    const auto key = fmt::format("k{}", s.key);
    std::string line;
    if (s.kind == 0 || s.kind >= 4) {
      line = fmt::format("A {} o{} {} {}", key, s.owner, s.lease_ms, s.kind == 4 ? 0 : s.wait_ms);
    } else if (s.kind == 1) {
      line = fmt::format("R {} {}", key, tokens[static_cast<std::size_t>(s.pick) % tokens.size()]);
    } else if (s.kind == 2) {
      if (!opened.contains(conn)) continue;
      h.events.push_back(history::Event{now_us, EventKind::close, conn, {}});
      closed.insert(conn);
      close_us[conn] = now_us;
      const auto at = std::max(now_us / 1000 + s.delay % (tolerance_ms + 1), last_at[conn]);
      inputs.push_back(Input{at, inputs.size(), conn, {}, 0});
      continue;
    } else {
      continue;
    }
    if (++requests > history::reference_requests_max) break;
    if (opened.insert(conn).second) h.events.push_back(history::Event{now_us, EventKind::connect, conn, {}});
    h.events.push_back(history::Event{now_us, EventKind::send, conn, line});
    const auto at = std::max(now_us / 1000 + s.delay, last_at[conn]);
    last_at[conn] = at;
    inputs.push_back(Input{at, inputs.size(), conn, line, s.read_us});
  }
  std::stable_sort(inputs.begin(), inputs.end(), [](const Input& a, const Input& b) { return a.at < b.at; });
  Model model(limits, Token{first_token});
  std::map<std::uint32_t, std::int64_t> last_read;
  const auto deliver = [&](const Outputs& outputs, std::int64_t at, int read_us, bool deferred) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const auto conn = static_cast<std::uint32_t>(outputs[i].connection.value);
      const bool late = deferred || i > 0;
      const std::int64_t delay = late ? (read_us * 7 + static_cast<int>(i) * 311) % (tolerance_ms * 1000 + 1) : read_us;
      const auto read = std::max(last_read[conn], at * 1000 + delay);
      if (close_us.contains(conn) && read > close_us[conn]) continue;  // the tester no longer reads it
      last_read[conn] = read;
      h.events.push_back(history::Event{read, EventKind::recv, conn, format_response(outputs[i].response)});
      if (outputs[i].response.kind == ResponseKind::granted) tokens.push_back(outputs[i].response.token.value);
    }
  };
  // Instants from the first input to a little past the last.
  const std::int64_t first = inputs.empty() ? 1 : std::min<std::int64_t>(1, inputs.front().at);
  const std::int64_t last = (inputs.empty() ? 1 : inputs.back().at) + 30;
  std::size_t next = 0;
  for (std::int64_t t = first; t <= last; ++t) {
    Outputs due;
    model.advance(TimeMs{t}, due);
    deliver(due, t, 1700, true);
    for (; next < inputs.size() && inputs[next].at == t; ++next) {
      Outputs out;
      if (inputs[next].line.empty()) {
        model.on_close(ConnectionId{inputs[next].conn}, TimeMs{t}, out);
      } else {
        model.on_line(ConnectionId{inputs[next].conn}, inputs[next].line, TimeMs{t}, out);
      }
      deliver(out, t, inputs[next].read_us, false);
    }
  }
  sort_events(h);
  return h;
}

// ---- cluster mode: the cluster's model, sessions, retries, late deadlines -------------

class ClusterRun {
 public:
  ClusterRun(std::int64_t tolerance_ms, std::int64_t allowance_ms) : model_(limits(), Token{1}, {}) {
    h_.header.mode = history::Mode::cluster;
    h_.header.limits = limits();
    h_.header.tolerance_ms = tolerance_ms;
    h_.header.clock_allowance_ms = allowance_ms;
  }
  static Limits limits() {
    Limits l;
    l.max_keys = 8;
    l.max_waiters_per_key = 8;
    l.max_waiters = 64;
    l.max_lease_ms = DurationMs{50};
    l.max_wait_ms = DurationMs{50};
    return l;
  }

  // kind 0: a client sends a new request (or its pending one again, on the
  // same connection's node: nothing); 1: the pending request is applied; 2:
  // the client gives up and sends again on a new connection; 3: the node
  // closes the connection; 4: time passes, the leader proposes what is due
  // (or, by `pick`, not yet); 5: the node answers E not-leader.
  void run(const Step& s) {
    now_us_ += s.gap_us;
    advance_to(now_us_ / 1000, s.pick % 3 != 0);
    auto& c = clients_[static_cast<std::size_t>(s.owner)];
    switch (s.kind) {
      case 0: {
        if (c.pending || sends_ >= history::reference_requests_max) return;
        ++c.seq;
        const auto key = fmt::format("k{}", s.key);
        if (s.pick % 3 == 0 && !c.tokens.empty()) {
          const auto& [k, token] = c.tokens[static_cast<std::size_t>(s.pick) % c.tokens.size()];
          c.line = fmt::format("R {} {} c{} {}", k, token, s.owner, c.seq);
          c.command = cluster::Release{cluster::Session{fmt::format("c{}", s.owner), c.seq}, {}, k, Token{token}, {}};
        } else {
          c.line = fmt::format("A {} c{}s{} {} {} c{} {}", key, s.owner, c.seq, s.lease_ms, s.wait_ms, s.owner, c.seq);
          c.command = cluster::Acquire{cluster::Session{fmt::format("c{}", s.owner), c.seq}, {}, key,
                                       fmt::format("c{}s{}", s.owner, c.seq), DurationMs{s.lease_ms},
                                       DurationMs{s.wait_ms}, {}};
        }
        c.pending = true;
        send(c);
        return;
      }
      case 1: {
        if (!c.pending || c.conn == 0 || c.applied_on == c.conn) return;
        auto command = c.command;
        std::visit(
            [&](auto& r) {
              using R = std::decay_t<decltype(r)>;
              if constexpr (std::is_same_v<R, cluster::Acquire> || std::is_same_v<R, cluster::Release>) {
                r.connection = ConnectionId{c.conn};
                r.now = TimeMs{now_us_ / 1000 + s.delay % (h_.header.clock_allowance_ms + 1)};
              }
            },
            command);
        c.applied_on = c.conn;
        deliver(model_.apply(command), s.read_us);
        return;
      }
      case 2:
        if (!c.pending || c.conn == 0) return;
        event(EventKind::close, c.conn);
        open_.erase(c.conn);
        c.conn = 0;
        send(c);
        return;
      case 3:
        if (c.conn == 0) return;
        event(EventKind::eof, c.conn);
        if (s.pick % 2 == 0) deliver(model_.apply(cluster::Close{ConnectionId{c.conn}, TimeMs{now_us_ / 1000}}), 0);
        open_.erase(c.conn);
        c.conn = 0;
        return;
      case 5:
        if (!c.pending || c.conn == 0 || c.applied_on == c.conn) return;
        event(EventKind::recv, c.conn, "E not-leader");
        c.conn = 0;  // it reads no more there; it sends again below
        send(c);
        return;
      default:
        return;
    }
  }

  const history::History& finish() {
    advance_to(now_us_ / 1000 + 40, true);
    now_us_ += 40'000;
    for (const auto id : open_) event(EventKind::close, id);
    sort_events(h_);
    return h_;
  }

 private:
  struct Client {
    std::uint64_t seq = 0;
    bool pending = false;
    cluster::Command command;
    std::string line;
    std::uint32_t conn = 0;        // where it reads now
    std::uint32_t applied_on = 0;  // the connection its pending request was applied from
    std::vector<std::pair<std::string, std::uint64_t>> tokens;
  };

  void event(EventKind kind, std::uint32_t conn, std::string line = {}, std::int64_t at_us = -1) {
    h_.events.push_back(history::Event{at_us < 0 ? now_us_ : at_us, kind, conn, std::move(line)});
  }

  void send(Client& c) {
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
      const auto read = now_us_ + read_us % (h_.header.tolerance_ms * 1000 + 1);
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
  // due, unless `on_time` is false (it is late this time).
  void advance_to(std::int64_t ms, bool on_time) {
    if (!on_time) return;
    std::vector<cluster::Command> due;
    for (const auto& [key, st] : model_.keys()) {
      for (const auto& w : st.queue) {
        if (w.deadline.value <= ms) due.push_back(cluster::Timeout{key, cluster::WaiterId{w.id}, TimeMs{ms}});
      }
      if (st.expiry.value <= ms) due.push_back(cluster::Expire{key, st.token, TimeMs{ms}});
    }
    for (const auto& command : due) deliver(model_.apply(command), 300);
  }

  model::ClusterModel model_;
  history::History h_;
  std::array<Client, 3> clients_{};
  std::int64_t now_us_ = 1000;
  std::uint32_t next_conn_ = 1;
  std::size_t sends_ = 0;
  std::set<std::uint32_t> open_;
};

// ---- the comparison ------------------------------------------------------------

std::string text_of(const history::History& h) {
  std::ostringstream out;
  history::write_history(out, h);
  return out.str();
}

struct Tally {
  std::atomic<std::uint64_t> cases{0}, unknown{0}, violations{0}, checker_unknown{0};
};
Tally simple_tally, cluster_tally;

void compare(const history::History& h, Tally& tally) {
  if (history::reference_refusal(h)) return;
  history::CheckOptions options;
  options.shrink = false;
  options.budget_states = 1'000'000;
  const auto checked = history::check_history(h, options);
  // A history with no response that has an explanation tests nothing: its
  // verdict is unknown, by rule (S17, C17); the reference then conforms.
  const bool silent =
      std::none_of(h.events.begin(), h.events.end(), [](const auto& e) { return e.kind == EventKind::recv; });
  history::ReferenceOptions reference_options;
  reference_options.states_max = 300'000;
  const auto reference = history::check_reference(h, reference_options);
  ++tally.cases;
  if (silent && checked.verdict == history::Verdict::unknown) {
    RC_ASSERT(reference.verdict == history::ReferenceResult::Verdict::conforms);
    return;
  }
  if (checked.verdict == history::Verdict::unknown || reference.verdict == history::ReferenceResult::Verdict::unknown) {
    ++tally.unknown;
    if (checked.verdict == history::Verdict::unknown) ++tally.checker_unknown;
    return;
  }
  const bool checker_conforms = checked.verdict == history::Verdict::conforms;
  const bool reference_conforms = reference.verdict == history::ReferenceResult::Verdict::conforms;
  if (!reference_conforms) ++tally.violations;
  std::string disagreement;
  if (checker_conforms != reference_conforms) {
    disagreement = fmt::format("checker: {}, reference: {} ({})", checker_conforms ? "conforms" : "violation",
                               reference_conforms ? "conforms" : "violation", reference.reason);
  } else if (checker_conforms && h.header.mode == history::Mode::cluster &&
             checked.lateness_ms != reference.least_lateness_ms) {
    disagreement = fmt::format("least lateness: checker {} ms, reference {} ms", checked.lateness_ms,
                               reference.least_lateness_ms);
  }
  if (!disagreement.empty()) {
    std::string findings;
    for (const auto& f : checked.violations) findings += "  checker: " + f.summary + "\n";
    RC_FAIL(fmt::format("{}\n{}the history:\n{}", disagreement, findings, text_of(h)));
  }
}

// Each property also checks, at its end, that unknowns stay rare.
void unknowns_rare(const Tally& tally) {
  const auto cases = tally.cases.load();
  ::testing::Test::RecordProperty("cases", std::to_string(cases));
  ::testing::Test::RecordProperty("unknown", std::to_string(tally.unknown.load()));
  ::testing::Test::RecordProperty("violations", std::to_string(tally.violations.load()));
  std::printf("cases %llu, unknown %llu (checker %llu), violations %llu\n", static_cast<unsigned long long>(cases),
              static_cast<unsigned long long>(tally.unknown.load()),
              static_cast<unsigned long long>(tally.checker_unknown.load()),
              static_cast<unsigned long long>(tally.violations.load()));
  EXPECT_LE(tally.unknown.load() * 1000, cases) << "more than 0.1% of the cases were undecided";
}

TEST(ReferenceDifferential, SimpleMode) {
  const bool ok = rc::check("simple mode: the checker agrees with the reference", [] {
    const auto steps = *rc::gen::resize(14, rc::gen::container<std::vector<Step>>(gen_step()));
    const auto tolerance = *rc::gen::inRange<std::int64_t>(1, 4);
    const auto sweep = *rc::gen::element<std::int64_t>(7, 12, 20, 1000);
    const auto first_token = *rc::gen::inRange<std::uint64_t>(1, 4);
    auto h = simple_run(steps, tolerance, sweep, first_token);
    mutate(h, *gen_mutation());
    compare(h, simple_tally);
  });
  EXPECT_TRUE(ok);
  unknowns_rare(simple_tally);
}

TEST(ReferenceDifferential, ClusterMode) {
  const bool ok = rc::check("cluster mode: the checker agrees with the reference", [] {
    const auto steps = *rc::gen::resize(20, rc::gen::container<std::vector<Step>>(gen_step()));
    const auto tolerance = *rc::gen::inRange<std::int64_t>(1, 4);
    const auto allowance = *rc::gen::element<std::int64_t>(0, 0, 2, 5);
    ClusterRun run(tolerance, allowance);
    for (const auto& s : steps) run.run(s);
    auto h = run.finish();
    if (*rc::gen::element(0, 0, 1) == 1) h.header.max_lateness_ms = *rc::gen::inRange<std::int64_t>(0, 30);
    mutate(h, *gen_mutation());
    compare(h, cluster_tally);
  });
  EXPECT_TRUE(ok);
  unknowns_rare(cluster_tally);
}

}  // namespace
}  // namespace lockstep::testing
