// The black-box checker's cluster reading against the cluster's reference
// model (model/cluster_model): histories that the model itself produces must
// conform, and a history whose grants carry one token twice must not.
//
// A random schedule drives an idealised cluster: clients (each one request
// at a time, with its session) send on a new connection per attempt; the
// schedule applies a client's current attempt to the model (the stamp is
// the instant plus a clock error in [0, 2·S]), gives attempts up and
// retries them on a new connection with the same session, lets a node close
// a connection whose request's fate is unknown, and moves time on, after
// which the leader proposes the Timeouts and Expires its clock says are due
// (sometimes not yet: late ones). Every response the model sends to a
// connection the client still reads is recorded at that instant. The
// recorded history, read as a cluster's with the same 2·S, must conform; a
// failure shrinks to the shortest schedule the checker refuses. Then, when
// two grants on different keys were heard, one of them is made to carry the
// other's token: tokens are unique, so the checker must find a violation.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "model/cluster_model.hpp"
#include "check/checker.hpp"
#include "check/history.hpp"

namespace lockstep::testing {
namespace {

constexpr int clients = 3;
constexpr int keys = 2;

struct Step {
  enum class Kind { send, apply, retry, drop, tick };
  Kind kind = Kind::tick;
  int client = 0;
  int key = 0;
  bool release = false;
  bool old_token = false;
  std::int64_t lease_ms = 1, wait_ms = 0;
  std::int64_t amount = 1;  // tick: ms; apply: clock error
  bool late = false;        // tick: the leader proposes nothing due this time
};

rc::Gen<Step> gen_step(std::int64_t allowance_ms) {
  return rc::gen::apply(
      [allowance_ms](int kind, int client, int key, bool release, bool old_token, std::int64_t lease, std::int64_t wait,
                     std::int64_t amount, bool late) {
        Step step;
        step.kind = static_cast<Step::Kind>(kind);
        step.client = client;
        step.key = key;
        step.release = release;
        step.old_token = old_token;
        step.lease_ms = lease;
        step.wait_ms = wait;
        step.amount = step.kind == Step::Kind::apply ? amount % (allowance_ms + 1) : 1 + amount % 40;
        step.late = late;
        return step;
      },
      rc::gen::weightedElement<int>({{5, 0}, {7, 1}, {1, 2}, {1, 3}, {4, 4}}), rc::gen::inRange(0, clients),
      rc::gen::inRange(0, keys), rc::gen::arbitrary<bool>(), rc::gen::weightedElement<bool>({{1, true}, {4, false}}),
      rc::gen::inRange<std::int64_t>(5, 80), rc::gen::weightedElement<std::int64_t>({{1, 0}, {3, 30}, {2, 90}}),
      rc::gen::inRange<std::int64_t>(0, 1000), rc::gen::weightedElement<bool>({{1, true}, {3, false}}));
}

// Runs a schedule on the model and records what the clients saw.
class Cluster {
 public:
  explicit Cluster(std::int64_t allowance_ms) : allowance_ms_(allowance_ms), model_(limits(), Token{1}, {}) {
    history_.header.mode = history::Mode::cluster;
    history_.header.limits = limits();
    history_.header.clock_allowance_ms = allowance_ms;
    history_.header.tolerance_ms = 1;
  }

  static Limits limits() {
    Limits l;
    l.max_keys = 8;
    l.max_waiters_per_key = 8;
    l.max_waiters = 32;
    l.max_lease_ms = DurationMs{100};
    l.max_wait_ms = DurationMs{100};
    return l;
  }

  void run(const Step& step) {
    auto& c = clients_[static_cast<std::size_t>(step.client)];
    switch (step.kind) {
      case Step::Kind::send: {
        if (c.outstanding) return;
        ++c.sequence;
        const auto key = fmt::format("k{}", step.key);
        const auto client = fmt::format("c{}", step.client);
        if (step.release && !c.tokens.empty()) {
          const auto& [held_key, token] = step.old_token ? c.tokens.front() : c.tokens.back();
          c.command = cluster::Release{cluster::Session{client, c.sequence}, {}, held_key, token, TimeMs{0}};
          c.line = fmt::format("R {} {} {} {}", held_key, token.value, client, c.sequence);
        } else {
          // Owners name their request, as the simulator's do.
          const auto owner = fmt::format("c{}s{}", step.client, c.sequence);
          c.command = cluster::Acquire{cluster::Session{client, c.sequence}, {}, key, owner, DurationMs{step.lease_ms},
                                       DurationMs{step.wait_ms}, TimeMs{0}};
          c.line = fmt::format("A {} {} {} {} {} {}", key, owner, step.lease_ms, step.wait_ms, client, c.sequence);
        }
        c.outstanding = true;
        attempt(c);
        return;
      }
      case Step::Kind::apply: {
        // The current attempt, or the last one if the node closed it (its
        // proposal may still commit; the answer then reaches nobody).
        if (!c.outstanding || c.last_connection == 0) return;
        auto command = c.command;
        const TimeMs stamp{now_ + step.amount};
        std::visit(
            [&](auto& r) {
              if constexpr (std::is_same_v<std::decay_t<decltype(r)>, cluster::Acquire> ||
                            std::is_same_v<std::decay_t<decltype(r)>, cluster::Release>) {
                r.connection = ConnectionId{c.last_connection};
                r.now = stamp;
              }
            },
            command);
        deliver(model_.apply(command));
        return;
      }
      case Step::Kind::retry:
        if (!c.outstanding) return;
        give_up(c);
        attempt(c);
        return;
      case Step::Kind::drop:
        // The node closes the connection: the request's fate is unknown.
        if (c.connection == 0) return;
        add(history::EventKind::eof, c.connection);
        open_.erase(c.connection);
        c.connection = 0;
        return;
      case Step::Kind::tick:
        now_ += step.amount;
        if (!step.late) propose_due(TimeMs{now_ + allowance_ms_ / 2});
        return;
    }
  }

  // The end: every connection still open was watched until now.
  const history::History& finish() {
    now_ += 1;
    for (const auto id : open_) add(history::EventKind::close, id);
    open_.clear();
    return history_;
  }

 private:
  struct Client {
    std::uint64_t sequence = 0;
    bool outstanding = false;
    cluster::Command command;
    std::string line;
    std::uint32_t connection = 0;       // the one it reads, 0: none
    std::uint32_t last_connection = 0;  // of its last attempt
    std::vector<std::pair<std::string, Token>> tokens;  // granted, oldest first
  };

  void add(history::EventKind kind, std::uint32_t conn, std::string line = {}) {
    history_.events.push_back(history::Event{now_ * 1000, kind, conn, std::move(line)});
  }

  void attempt(Client& c) {
    c.connection = c.last_connection = next_connection_++;
    open_.insert(c.connection);
    add(history::EventKind::connect, c.connection);
    add(history::EventKind::send, c.connection, c.line);
  }

  void give_up(Client& c) {
    if (c.connection == 0) return;
    add(history::EventKind::close, c.connection);
    open_.erase(c.connection);
    c.connection = 0;
  }

  // Responses reach the client reading their connection at once.
  void deliver(const Outputs& outputs) {
    for (const auto& out : outputs) {
      const auto conn = static_cast<std::uint32_t>(out.connection.value);
      if (!open_.contains(conn)) continue;
      add(history::EventKind::recv, conn, format_response(out.response));
      for (auto& c : clients_) {
        if (c.connection != conn) continue;
        if (out.response.kind == ResponseKind::granted) c.tokens.emplace_back(out.response.key, out.response.token);
        c.outstanding = false;
        give_up(c);
      }
    }
  }

  // What a leader whose clock reads `clock` proposes: Timeouts, then Expires.
  void propose_due(TimeMs clock) {
    std::vector<cluster::Command> due;
    for (const auto& [key, state] : model_.keys()) {
      for (const auto& waiter : state.queue) {
        if (waiter.deadline <= clock) due.push_back(cluster::Timeout{key, cluster::WaiterId{waiter.id}, clock});
      }
    }
    for (const auto& [key, state] : model_.keys()) {
      if (state.expiry <= clock) due.push_back(cluster::Expire{key, state.token, clock});
    }
    for (const auto& command : due) deliver(model_.apply(command));
  }

  std::int64_t allowance_ms_;
  std::int64_t now_ = 1;
  model::ClusterModel model_;
  std::array<Client, clients> clients_{};
  std::uint32_t next_connection_ = 1;
  std::set<std::uint32_t> open_;
  history::History history_;
};

history::History record(std::int64_t allowance_ms, const std::vector<Step>& steps) {
  Cluster cluster(allowance_ms);
  for (const auto& step : steps) cluster.run(step);
  return cluster.finish();
}

std::string verdict_text(const history::CheckResult& result) {
  std::string text;
  for (const auto& line : history::summary_lines(result)) text += line + "\n";
  return text;
}

RC_GTEST_PROP(ClusterHistoryFromModel, ConformsAndDuplicateTokensDoNot, ()) {
  const auto allowance = *rc::gen::element<std::int64_t>(0, 4, 20);
  const auto steps = *rc::gen::scale(3.0, rc::gen::container<std::vector<Step>>(gen_step(allowance)));
  const auto recorded = record(allowance, steps);
  const auto result = history::check_history(recorded);
  if (result.verdict == history::Verdict::violation) {
    std::ostringstream text;
    history::write_history(text, recorded);
    RC_LOG() << text.str() << verdict_text(result);
  }
  RC_ASSERT(result.verdict != history::Verdict::violation);
  if (result.verdict == history::Verdict::unknown) RC_ASSERT(result.responses == 0);

  // Two grants heard on different keys: give the later the earlier's token.
  std::optional<std::size_t> first, second;
  for (std::size_t i = 0; i < recorded.events.size(); ++i) {
    const auto& event = recorded.events[i];
    if (event.kind != history::EventKind::recv || event.line[0] != 'A') continue;
    if (!first) {
      first = i;
    } else if (event.line.substr(event.line.rfind(' ')) != recorded.events[*first].line.substr(recorded.events[*first].line.rfind(' '))) {
      second = i;
      break;
    }
  }
  RC_CLASSIFY(result.responses > 30, "more than 30 responses");
  RC_CLASSIFY(second.has_value(), "grants on two keys");
  if (!second) return;
  auto broken = recorded;
  const auto token_of = [](const std::string& line) { return line.substr(2, line.find(' ', 2) - 2); };
  auto& line = broken.events[*second].line;
  line = "A " + token_of(recorded.events[*first].line) + line.substr(line.find(' ', 2));
  const auto judged = history::check_history(broken);
  RC_ASSERT(judged.verdict == history::Verdict::violation);
}

}  // namespace
}  // namespace lockstep::testing
