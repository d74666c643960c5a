#include "sim/cluster/trace.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "impl/cluster/bugs.hpp"
#include "impl/raft/bugs.hpp"
#include "sim/cluster/checker.hpp"

namespace lockstep::sim {

namespace {

using Json = nlohmann::ordered_json;  // fields in the order written: stable bytes

const cluster::Session* session_of(const cluster::Command& command) {
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) return &a->session;
  if (const auto* r = std::get_if<cluster::Release>(&command)) return &r->session;
  return nullptr;
}

// The commands framed in an entry's (or a proposal's) bytes.
std::vector<cluster::Command> commands_of(std::string_view bytes) {
  auto result = cluster::decode_entry(bytes);
  std::vector<cluster::Command> commands;
  if (std::holds_alternative<cluster::DecodeError>(result)) return commands;
  for (auto& frame : std::get<std::vector<cluster::Framed>>(result)) commands.push_back(std::move(frame.command));
  return commands;
}

bool is_deadline(const cluster::Command& command) {
  return std::holds_alternative<cluster::Expire>(command) || std::holds_alternative<cluster::Timeout>(command);
}

// `holder`, `token`, `expiry` and the queue as [client, seq] pairs, or
// holder "" when the key is free.
Json key_view(const cluster::LockMachine& machine, const std::string& key) {
  const auto found = machine.keys().find(key);
  if (found == machine.keys().end()) return Json{{"holder", ""}, {"token", 0}, {"expiry", 0}, {"queue", Json::array()}};
  const auto& state = found->second;
  Json queue = Json::array();
  for (const auto& [id, waiter] : state.queue) queue.push_back(Json::array({waiter.session.client, waiter.session.sequence}));
  return Json{{"holder", owner_session(state.owner).value_or(cluster::Session{}).client},
              {"token", state.token.value},
              {"expiry", state.expiry.value},
              {"queue", std::move(queue)}};
}

}  // namespace

ClusterTraceWriter::ClusterTraceWriter(std::ostream& out, const ClusterSimParams& params) : out_(out) {
  const auto bug = params.bug != cluster::ClusterBug::none ? std::string(cluster::cluster_bug_name(params.bug))
                                                           : std::string(raft::raft_bug_name(params.raft.raft.bug));
  Json header{{"schema", cluster_trace_schema},
              {"event", "Run"},
              {"seed", params.raft.seed},
              {"bug", bug},
              {"nodes", params.raft.nodes},
              {"clients", params.clients},
              {"skew_bound_ms", params.skew_bound_ms.value},
              {"skew_beyond_bound", params.skew_beyond_bound},
              {"max_keys", params.limits.max_keys},
              {"max_waiters_per_key", params.limits.max_waiters_per_key},
              {"max_waiters", params.limits.max_waiters},
              {"session_window", params.sessions.window},
              {"waiter_grace_ms", params.waiter_grace_ms.value},
              {"params", describe(params)}};
  write(header.dump());
}

void ClusterTraceWriter::write(const std::string& line) {
  out_ << line << '\n';
  ++lines_;
}

raft::NodeId ClusterTraceWriter::leader_of(raft::Term term) const {
  const auto found = leaders_.find(term);
  return found == leaders_.end() ? 0 : found->second;
}

std::string ClusterTraceWriter::command_json(const cluster::Command& command, raft::NodeId by) const {
  Json j;
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) {
    j = Json{{"type", "Acquire"}, {"client", a->session.client}, {"seq", a->session.sequence}, {"key", a->key},
             {"lease_ms", a->lease_ms.value}, {"wait_ms", a->wait_ms.value}, {"token", 0}, {"stamp", a->now.value}};
  } else if (const auto* r = std::get_if<cluster::Release>(&command)) {
    j = Json{{"type", "Release"}, {"client", r->session.client}, {"seq", r->session.sequence}, {"key", r->key},
             {"lease_ms", 0}, {"wait_ms", 0}, {"token", r->token.value}, {"stamp", r->now.value}};
  } else if (const auto* e = std::get_if<cluster::Expire>(&command)) {
    j = Json{{"type", "Expire"}, {"client", ""}, {"seq", 0}, {"key", e->key}, {"lease_ms", 0}, {"wait_ms", 0},
             {"token", e->token.value}, {"stamp", e->now.value}};
  } else if (const auto* t = std::get_if<cluster::Timeout>(&command)) {
    // The spec names a waiter by the session that queued it.
    const auto found = waiters_.find(t->waiter.value);
    const auto session = found == waiters_.end() ? cluster::Session{} : found->second;
    j = Json{{"type", "Timeout"}, {"client", session.client}, {"seq", session.sequence}, {"key", t->key},
             {"lease_ms", 0}, {"wait_ms", 0}, {"token", 0}, {"stamp", t->now.value}, {"waiter", t->waiter.value}};
  } else {
    const auto& c = std::get<cluster::Close>(command);
    j = Json{{"type", "Close"}, {"conn", c.connection.value}, {"stamp", c.now.value}};
  }
  j["by"] = by;
  j["epoch"] = cluster::command_epoch(command);
  return j.dump();
}

// A response as the request it answers: A, T and B name it by their owner
// (`c<client>s<seq>`); R, N and E answer `answering`, the command that
// produced them, or, sent to a client, that client's request (seq 0: the
// wire does not say which).
std::string ClusterTraceWriter::response_json(const Response& response, const cluster::Command* answering) const {
  cluster::Session session;
  if (response.kind == ResponseKind::granted || response.kind == ResponseKind::timed_out ||
      response.kind == ResponseKind::busy) {
    session = owner_session(response.owner).value_or(cluster::Session{});
  } else if (answering != nullptr) {
    if (const auto* s = session_of(*answering)) session = *s;
  }
  return Json{{"kind", std::string(1, static_cast<char>(response.kind))},
              {"client", session.client},
              {"seq", session.sequence},
              {"key", response.key},
              {"token", response.token.value}}
      .dump();
}

void ClusterTraceWriter::elect(raft::NodeId node, const raft::RaftNode& raft, TimeMs now) {
  leaders_[raft.term()] = node;
  // Its uncommitted entries: its log past what some node has applied (a
  // leader holds every committed entry; one not yet applied anywhere is
  // still uncommitted for the spec, whose commit is the first apply).
  std::string adopted;
  for (const auto& entry : raft.log()) {
    if (entry.index <= first_applied_ || entry.kind != raft::EntryKind::command) continue;
    for (const auto& command : commands_of(entry.data)) {
      adopted += (adopted.empty() ? "" : ",") + command_json(command, leader_of(entry.term));
    }
  }
  write(fmt::format(R"({{"t":{},"event":"Elect","node":{},"term":{},"adopted":[{}]}})", now.value, node, raft.term(),
                    adopted));
}

void ClusterTraceWriter::propose(raft::NodeId node, const std::string& data, const RaftProposeOutcome& outcome,
                                 TimeMs clock, TimeMs now) {
  if (outcome.kind != raft::ProposeResult::Kind::accepted) return;  // refused: nothing was proposed
  leaders_[outcome.term] = node;
  for (const auto& command : commands_of(data)) propose_command(node, command, outcome, clock, now);
}

void ClusterTraceWriter::propose_command(raft::NodeId node, const cluster::Command& command,
                                         const RaftProposeOutcome& outcome, TimeMs clock, TimeMs now) {
  if (const auto* session = session_of(command); session != nullptr && !session->anonymous()) {
    auto unstamped = command;
    cluster::set_epoch(unstamped, 0);
    if (auto* a = std::get_if<cluster::Acquire>(&unstamped)) a->now = TimeMs{0};
    if (auto* r = std::get_if<cluster::Release>(&unstamped)) r->now = TimeMs{0};
    auto text = command_json(unstamped, 0);
    auto& last = sent_[session->client];
    // The client's next request, as it sent it: first seen here, where a
    // leader takes it; or one that reuses the last one's number for
    // another request.
    if (session->sequence > last.sequence || (session->sequence == last.sequence && text != last.command)) {
      write(fmt::format(R"({{"t":{},"event":"Send","client":{},"command":{}}})", now.value,
                        Json(session->client).dump(), text));
      last = Sent{session->sequence, std::move(text)};
    }
  }
  write(fmt::format(R"({{"t":{},"event":"Propose","node":{},"clock":{},"index":{},"term":{},"command":{}}})",
                    now.value, node, clock.value, outcome.index, outcome.term, command_json(command, node)));
}

void ClusterTraceWriter::heap_due(raft::NodeId node, TimeMs clock, const cluster::LockMachine& machine,
                                  const std::vector<cluster::Proposal>& proposals, TimeMs now) {
  std::vector<cluster::Command> due;
  for (const auto& proposal : proposals) {
    for (auto& command : commands_of(proposal.bytes)) {
      if (is_deadline(command)) due.push_back(std::move(command));
    }
  }
  if (due.empty()) {
    bool any = false;
    for (const auto& deadline : machine.deadlines()) any = any || deadline.at <= clock;
    if (!any) return;
  }
  std::string list;
  for (const auto& command : due) list += (list.empty() ? "" : ",") + command_json(command, node);
  write(fmt::format(R"({{"t":{},"event":"HeapDue","node":{},"clock":{},"due":[{}]}})", now.value, node, clock.value,
                    list));
}

void ClusterTraceWriter::apply(raft::NodeId node, raft::Index index, raft::Term term, const cluster::Command& command,
                               const cluster::LockMachine& machine, const cluster::Applied& applied, TimeMs now) {
  // The first node to apply an index applies all of its commands first, one
  // after the other (an entry may hold several). A node that applies that
  // index again later (restarted from an older snapshot) does not commit it.
  const bool first = index > first_applied_ || (first_entry_open_ && index == first_applied_ && node == first_applier_);
  if (index > first_applied_) {
    first_applied_ = index;
    first_applier_ = node;
  }
  first_entry_open_ = first;
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) {
    for (const auto& deadline : applied.deadlines) {
      if (deadline.target.kind == cluster::DeadlineTarget::Kind::timeout) waiters_[deadline.target.id] = a->session;
    }
  }
  if (first) {
    write(fmt::format(R"({{"t":{},"event":"Commit","index":{},"term":{},"command":{}}})", now.value, index, term,
                      command_json(command, leader_of(term))));
  }
  std::string out;
  for (const auto& o : applied.responses) out += (out.empty() ? "" : ",") + response_json(o.response, &command);
  const auto* key = cluster::command_key(command);
  write(fmt::format(R"({{"t":{},"event":"Apply","node":{},"index":{},"out":[{}],"key":{}}})", now.value, node, index,
                    out, key != nullptr ? key_view(machine, *key).dump() : std::string("null")));
}

void ClusterTraceWriter::restore(raft::NodeId node, const cluster::LockMachine& machine, TimeMs now) {
  first_entry_open_ = false;
  if (down_.contains(node)) return;
  write(fmt::format(R"({{"t":{},"event":"Restore","node":{},"index":{}}})", now.value, node, machine.applied()));
}

void ClusterTraceWriter::restart(raft::NodeId node, const cluster::LockMachine& machine, TimeMs now) {
  first_entry_open_ = false;
  down_.erase(node);
  write(fmt::format(R"({{"t":{},"event":"Restart","node":{},"index":{}}})", now.value, node, machine.applied()));
}

void ClusterTraceWriter::give_up(const std::string& client, TimeMs now) {
  write(fmt::format(R"({{"t":{},"event":"GiveUp","client":{}}})", now.value, Json(client).dump()));
}

void ClusterTraceWriter::reply(const ClientConnection& connection, const Response& response, TimeMs now) {
  // A redirect, or a leader's refusal to take one more request, answers no
  // command: the node sends it instead of proposing (the spec has no such
  // step, and the client asks again).
  if (response.kind == ResponseKind::error &&
      (response.reason.starts_with("not-leader") || response.reason == "too many requests in flight")) {
    return;
  }
  auto line = response_json(response, nullptr);
  if (response.kind != ResponseKind::granted && response.kind != ResponseKind::timed_out &&
      response.kind != ResponseKind::busy) {
    // R, N and E name no owner: the connection says which client.
    auto j = Json::parse(line);
    j["client"] = std::to_string(connection.client);
    line = j.dump();
  }
  write(fmt::format(R"({{"t":{},"event":"Reply","node":{},"conn":{},"response":{}}})", now.value, connection.node,
                    connection.id.value, line));
}

void ClusterTraceWriter::finish(TimeMs at, std::uint64_t violations, std::uint64_t event_hash) {
  write(Json{{"t", at.value}, {"event", "End"}, {"violations", violations}, {"event_hash", event_hash}}.dump());
}

}  // namespace lockstep::sim
