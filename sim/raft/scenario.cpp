// The scenario interpreter: parses the blocks, drives a RaftCluster with a
// hand-controlled network (messages wait in flight until `deliver` or
// `stabilize`), and prints what happened in a form a reviewer can check
// against the Raft paper by hand.
#include "sim/raft/scenario.hpp"

#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "impl/assert.hpp"
#include "sim/raft/cluster.hpp"

namespace lockstep::sim {

namespace {

using raft::Message;
using raft::MessageType;
using raft::NodeId;

constexpr DurationMs scenario_tick_ms{10};
constexpr std::uint64_t stabilize_rounds_max = 1000;

struct Block {
  std::vector<std::string> comments;  // `#` lines before the command
  std::string command;
  std::string expected;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, by)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::vector<Block> parse(const std::string& text, std::vector<std::string>& trailing) {
  std::vector<Block> blocks;
  const auto lines = split_lines(text);
  std::vector<std::string> comments;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    if (line.empty()) continue;
    if (line[0] == '#') {
      comments.push_back(line);
      continue;
    }
    Block b;
    b.comments = std::move(comments);
    comments.clear();
    b.command = line;
    if (i + 1 < lines.size() && lines[i + 1] == "----") {
      i += 2;
      while (i < lines.size() && !lines[i].empty()) b.expected += lines[i++] + "\n";
    }
    blocks.push_back(std::move(b));
  }
  trailing = std::move(comments);
  return blocks;
}

std::string entry_text(const raft::Entry& e) {
  if (e.kind == raft::EntryKind::noop) return fmt::format("{}@{} noop", e.index, e.term);
  return fmt::format("{}@{} {}", e.index, e.term, e.data);
}

std::string message_text(const Message& m) {
  auto text = fmt::format("{}->{} {} term={}", m.from, m.to, raft::message_type_name(m.type), m.term);
  switch (m.type) {
    case MessageType::pre_vote:
    case MessageType::vote:
      text += fmt::format(" last={}@{}", m.last_log_index, m.last_log_term);
      break;
    case MessageType::pre_vote_response:
    case MessageType::vote_response:
      text += m.granted ? " granted" : " rejected";
      break;
    case MessageType::append: {
      text += fmt::format(" prev={}@{} commit={}", m.prev_log_index, m.prev_log_term, m.commit);
      if (!m.entries.empty()) {
        std::string entries;
        for (const auto& e : m.entries) entries += (entries.empty() ? "" : ", ") + entry_text(e);
        text += " [" + entries + "]";
      }
      break;
    }
    case MessageType::append_response:
      if (m.granted) {
        text += fmt::format(" match={}", m.match_index);
      } else if (m.hint_index == 0) {
        text += " rejected";
      } else {
        text += fmt::format(" reject={} hint={}", m.reject_index, m.hint_index);
      }
      break;
    case MessageType::snapshot:
      text += fmt::format(" snapshot={}@{}", m.snapshot.index, m.snapshot.term);
      break;
  }
  return text;
}

class Interpreter {
 public:
  explicit Interpreter(raft::RaftBug bug) : bug_(bug) {}

  std::string run(const std::string& command) {
    out_.clear();
    const auto words = split(command, ' ');
    try {
      dispatch(words);
    } catch (const InvariantViolation& e) {
      line(fmt::format("VIOLATION [assert] {}", e.what()));
      ++violations_;
    } catch (const std::exception& e) {
      line(fmt::format("error: {}", e.what()));
    }
    if (out_.empty()) line("ok");
    return out_;
  }

  std::uint64_t violations() const { return violations_; }

 private:
  void line(const std::string& text) { out_ += text + "\n"; }

  static std::optional<std::string> option(const std::vector<std::string>& words, const std::string& name) {
    for (const auto& w : words) {
      if (w.rfind(name + "=", 0) == 0) return w.substr(name.size() + 1);
    }
    return std::nullopt;
  }

  NodeId node_arg(const std::vector<std::string>& words, std::size_t at) const {
    if (words.size() <= at) throw std::runtime_error("missing node id");
    const auto id = static_cast<NodeId>(std::stoul(words[at]));
    if (!cluster_ || id < 1 || id > cluster_->size()) throw std::runtime_error("no node " + words[at]);
    return id;
  }

  void dispatch(const std::vector<std::string>& words) {
    if (words.empty()) throw std::runtime_error("empty command");
    const auto& name = words[0];
    if (name == "add-nodes") return add_nodes(words);
    if (!cluster_) throw std::runtime_error("add-nodes first");
    if (name == "campaign") return campaign(words);
    if (name == "propose") return propose(words);
    if (name == "tick") return tick(words);
    if (name == "deliver") return deliver(words);
    if (name == "stabilize") return stabilize();
    if (name == "drop") return drop();
    if (name == "partition") return partition(words);
    if (name == "cut") return cut(words);
    if (name == "heal") return heal();
    if (name == "crash") return crash(words);
    if (name == "restart") return restart(words);
    if (name == "compact") return compact(words);
    if (name == "status") return status();
    throw std::runtime_error("unknown command " + name);
  }

  void campaign(const std::vector<std::string>& words) {
    const auto id = node_arg(words, 1);
    act(id, [&] { return cluster_->campaign(id, now_[id]); });
  }

  void propose(const std::vector<std::string>& words) {
    const auto id = node_arg(words, 1);
    if (words.size() < 3) throw std::runtime_error("propose I DATA");
    act(id, [&] { return propose_to(id, words[2]); });
  }

  // Proposes `data` at node `id`, prints how the node took it, and returns
  // what the node sent.
  std::vector<Message> propose_to(NodeId id, const std::string& data) {
    auto r = cluster_->propose(id, data, now_[id]);
    switch (r.kind) {
      case raft::ProposeResult::Kind::accepted:
        line(fmt::format("{}: accepted {}@{}", id, r.index, r.term));
        break;
      case raft::ProposeResult::Kind::not_leader:
        line(fmt::format("{}: not leader, leader hint {}", id, r.leader_hint));
        break;
      case raft::ProposeResult::Kind::too_many_uncommitted:
        line(fmt::format("{}: refused, too many uncommitted entries", id));
        break;
    }
    return std::move(r.messages);
  }

  void tick(const std::vector<std::string>& words) {
    const auto id = node_arg(words, 1);
    const auto n = std::stoul(option(words, "n").value_or("1"));
    for (unsigned long i = 0; i < n; ++i) {
      now_[id] = now_[id] + scenario_tick_ms;
      act(id, [&] { return cluster_->tick(id, now_[id]); });
    }
  }

  void deliver(const std::vector<std::string>& words) {
    const auto n = std::stoul(option(words, "n").value_or("1"));
    for (unsigned long i = 0; i < n && !in_flight_.empty(); ++i) deliver_round();
  }

  void stabilize() {
    for (std::uint64_t round = 0; !in_flight_.empty(); ++round) {
      if (round == stabilize_rounds_max) throw std::runtime_error("no quiescence");
      deliver_round();
    }
  }

  void drop() {
    line(fmt::format("dropped {} message(s)", in_flight_.size()));
    in_flight_.clear();
  }

  void cut(const std::vector<std::string>& words) {
    if (words.size() < 2) throw std::runtime_error("cut I>J");
    const auto parts = split(words[1], '>');
    if (parts.size() != 2) throw std::runtime_error("cut I>J");
    blocked_[std::stoul(parts[0])][std::stoul(parts[1])] = true;
  }

  void heal() {
    for (auto& row : blocked_) row.assign(row.size(), false);
  }

  void crash(const std::vector<std::string>& words) {
    const auto id = node_arg(words, 1);
    cluster_->crash(id);
    line(fmt::format("{}: crashed", id));
  }

  void restart(const std::vector<std::string>& words) {
    const auto id = node_arg(words, 1);
    cluster_->restart(id, now_[id]);
    line(state_line(id));
  }

  void compact(const std::vector<std::string>& words) {
    const auto id = node_arg(words, 1);
    if (words.size() < 3) throw std::runtime_error("compact I INDEX");
    const auto index = std::stoull(words[2]);
    act(id, [&] { return cluster_->compact(id, index); });
  }

  void status() {
    for (NodeId id = 1; id <= cluster_->size(); ++id) line(state_line(id));
  }

  void add_nodes(const std::vector<std::string>& words) {
    if (cluster_) throw std::runtime_error("add-nodes once per file");
    if (words.size() < 2) throw std::runtime_error("add-nodes N");
    const auto n = std::stoul(words[1]);
    raft::RaftConfig config;
    config.election_ms = DurationMs{10 * scenario_tick_ms.value};
    config.heartbeat_ms = scenario_tick_ms;
    config.pre_vote = option(words, "pre-vote").value_or("true") == "true";
    config.check_quorum = option(words, "check-quorum").value_or("true") == "true";
    config.inflight_max = static_cast<std::uint32_t>(std::stoul(option(words, "inflight").value_or("4")));
    config.entries_per_message_max = static_cast<std::uint32_t>(std::stoul(option(words, "batch").value_or("64")));
    config.uncommitted_entries_max = static_cast<std::uint32_t>(std::stoul(option(words, "uncommitted").value_or("256")));
    config.bug = bug_;
    cluster_ = std::make_unique<RaftCluster>(n, config, 1);
    now_.assign(n + 1, TimeMs{0});
    blocked_.assign(n + 1, std::vector<bool>(n + 1, false));
    for (NodeId id = 1; id <= n; ++id) {
      cluster_->restart(id, now_[id]);
      line(state_line(id));
    }
  }

  void partition(const std::vector<std::string>& words) {
    if (words.size() < 2) throw std::runtime_error("partition A,B|C");
    const auto n = cluster_->size();
    std::vector<std::size_t> group(n + 1, 0);  // 0: the unlisted nodes' group
    std::size_t g = 0;
    for (const auto& side : split(words[1], '|')) {
      ++g;
      for (const auto& id : split(side, ',')) group[node_arg({"", id}, 1)] = g;
    }
    for (NodeId a = 1; a <= n; ++a) {
      for (NodeId b = 1; b <= n; ++b) blocked_[a][b] = group[a] != group[b];
    }
  }

  struct View {
    bool alive = false;
    raft::Role role = raft::Role::follower;
    raft::Term term = 0;
    NodeId vote = 0, leader = 0;
    raft::Index commit = 0, last = 0, snapshot = 0;
    friend bool operator==(const View&, const View&) = default;
  };

  View view(NodeId id) const {
    View v;
    if (!cluster_->alive(id)) return v;
    const auto& n = cluster_->node(id);
    return View{true, n.role(), n.term(), n.vote(), n.leader(), n.commit(), n.last_index(), n.snapshot().index};
  }

  std::string state_line(NodeId id) const {
    if (!cluster_->alive(id)) return fmt::format("{}: down", id);
    const auto& n = cluster_->node(id);
    std::string log;
    for (const auto& e : n.log()) log += (log.empty() ? "" : " ") + fmt::format("{}@{}", e.index, e.term);
    std::string values;
    for (const auto& v : cluster_->machine(id).values()) values += (values.empty() ? "" : " ") + v.data;
    auto text = fmt::format("{}: {} term={} vote={} leader={} commit={} log=[{}]", id, raft::role_name(n.role()), n.term(),
                            n.vote(), n.leader(), n.commit(), log);
    if (n.snapshot().index > 0) text += fmt::format(" snapshot={}@{}", n.snapshot().index, n.snapshot().term);
    text += fmt::format(" applied=[{}]", values);
    return text;
  }

  // Runs one action of node `id`, queues what it sent, prints the node's
  // new state if it changed and any violation the checkers found.
  template <class Action>
  void act(NodeId id, Action action) {
    const auto before = view(id);
    auto sent = action();
    for (auto& m : sent) in_flight_.push_back(std::move(m));
    cluster_->check(now_[id]);
    if (view(id) != before) line("  " + state_line(id));
    report_violations();
  }

  void deliver_round() {
    auto round = std::move(in_flight_);
    in_flight_.clear();
    for (const auto& m : round) {
      if (blocked_[m.from][m.to]) {
        line(message_text(m) + " (dropped: partitioned)");
        continue;
      }
      if (!cluster_->alive(m.to)) {
        line(message_text(m) + " (dropped: node down)");
        continue;
      }
      line(message_text(m));
      act(m.to, [&] { return cluster_->deliver(m, now_[m.to]); });
    }
  }

  void report_violations() {
    const auto& all = cluster_->checker().violations();
    for (; reported_ < all.size(); ++reported_) {
      line(fmt::format("VIOLATION [{}] {}", all[reported_].checker, all[reported_].what));
    }
    violations_ = cluster_->checker().violation_count();
  }

  raft::RaftBug bug_;
  std::unique_ptr<RaftCluster> cluster_;
  std::vector<TimeMs> now_;
  std::vector<std::vector<bool>> blocked_;
  std::vector<Message> in_flight_;
  std::string out_;
  std::size_t reported_ = 0;
  std::uint64_t violations_ = 0;
};

}  // namespace

ScenarioResult run_scenario(const std::string& text, raft::RaftBug bug) {
  std::vector<std::string> trailing;
  const auto blocks = parse(text, trailing);
  Interpreter interpreter(bug);
  ScenarioResult result;
  for (const auto& b : blocks) {
    for (const auto& c : b.comments) result.rewritten += c + "\n";
    const auto produced = interpreter.run(b.command);
    result.rewritten += b.command + "\n----\n" + produced + "\n";
    if (produced != b.expected && result.matches) {
      result.matches = false;
      result.first_mismatch =
          fmt::format("command: {}\nexpected:\n{}produced:\n{}", b.command, b.expected, produced);
    }
  }
  for (const auto& c : trailing) result.rewritten += c + "\n";
  // One blank line between blocks, none after the last.
  while (result.rewritten.size() >= 2 && result.rewritten.ends_with("\n\n")) result.rewritten.pop_back();
  result.violations = interpreter.violations();
  return result;
}

}  // namespace lockstep::sim
