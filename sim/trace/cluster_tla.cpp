// A cluster trace (sim/trace/TRACE.md, "Cluster traces") as the sequence `Trace`
// of spec/TraceLockCluster.tla. Every line but the header and the end is one
// event, numbered from 1 in the trace's order. Two passes: the first finds
// the log positions a snapshot restores (the Commit there keeps the
// committed state), the keys and the last instant; the second writes the
// events as tuples (TraceLockCluster, "The events").
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "sim/trace/tla.hpp"
#include "sim/trace/tla_text.hpp"

namespace lockstep::sim {

namespace {

using namespace tla_text;

std::string node_name(std::int64_t node) { return node == 0 ? "\"\"" : fmt::format("\"n{}\"", node); }

// A session's client id as the trace writes it: a string ("" for none). The
// spec names the client `c<id>` ("" for none); Outcomes uses the names as
// record fields, so an id must be letters, digits and underscores.
std::string client_id(const Json& value, std::uint64_t line) {
  if (!value.is_string()) fail(line, "a client id is not a string");
  auto id = value.get<std::string>();
  const bool plain = std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!plain || id.size() > 64) fail(line, fmt::format("client id {} is not 1 to 64 letters, digits or '_'", value.dump()));
  return id;
}
std::string client_id(const Json& object, const char* field, std::uint64_t line) {
  return client_id(member(object, field, line), line);
}
std::string client_name(const std::string& id) { return id.empty() ? "\"\"" : tla_string("c" + id); }

std::int64_t limit(const Json& header, const char* field) {
  const auto it = header.find(field);
  if (it == header.end() || !it->is_number_unsigned()) fail(1, fmt::format("no limit '{}'", field));
  return static_cast<std::int64_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), tlc_int_max));
}

struct Line {
  std::uint64_t number = 0;
  Json object;
  std::string event;
};

std::string show_command(const Json& c) {
  const auto type = c.value("type", std::string("?"));
  const auto stamp = fmt::format(" @{} by n{}", c.value("stamp", 0), c.value("by", 0));
  const auto session = fmt::format("c{}#{}", c.value("client", std::string()), c.value("seq", 0));
  const auto key = c.value("key", std::string());
  if (type == "Acquire") {
    return fmt::format("Acquire({} {} lease {} wait {}){}", session, key, c.value("lease_ms", 0), c.value("wait_ms", 0),
                       stamp);
  }
  if (type == "Release") return fmt::format("Release({} {} token {}){}", session, key, c.value("token", 0), stamp);
  if (type == "Expire") return fmt::format("Expire({} token {}){}", key, c.value("token", 0), stamp);
  if (type == "Timeout") return fmt::format("Timeout({} waiter {}){}", key, session, stamp);
  return type;
}

std::string show_commands(const Json& list) {
  std::string text = "[";
  for (const auto& c : list) text += (text.size() > 1 ? ", " : "") + show_command(c);
  return text + "]";
}

std::string show_response(const Json& r) {
  const auto kind = r.value("kind", std::string("?"));
  const auto key = r.value("key", std::string());
  const auto client = r.value("client", std::string());
  const auto owner = fmt::format("c{}s{}", client, r.value("seq", 0));
  if (kind == "A") return fmt::format("A {} {} {}", r.value("token", 0), owner, key);
  if (kind == "T" || kind == "B") return fmt::format("{} {} {}", kind, owner, key);
  if (kind == "R" || kind == "N") return fmt::format("{} {} {} (to c{})", kind, r.value("token", 0), key, client);
  return fmt::format("{} (to c{})", kind, client);
}

std::string show_responses(const Json& list) {
  std::string text = "[";
  for (const auto& r : list) text += (text.size() > 1 ? ", " : "") + show_response(r);
  return text + "]";
}

std::string show_view(const Json& v) {
  if (v.value("holder", std::string()).empty()) return "free";
  std::string queue;
  for (const auto& w : v.value("queue", Json::array())) {
    if (w.is_array() && w.size() == 2) {
      queue += fmt::format(" c{}#{}", w[0].is_string() ? w[0].get<std::string>() : w[0].dump(), w[1].dump());
    }
  }
  return fmt::format("held by c{} token {} until {}, queue [{}]", v.value("holder", std::string()), v.value("token", 0),
                     v.value("expiry", 0), queue.empty() ? "" : queue.substr(1));
}

class Converter {
 public:
  Converter(const Json& header, std::vector<Line> lines) : lines_(std::move(lines)) {
    nodes_ = number(header, "nodes", 1);
    clients_ = number(header, "clients", 1);
    skew_ = number(header, "skew_bound_ms", 1);
    window_ = number(header, "session_window", 1);
    grace_ = number(header, "waiter_grace_ms", 1);
    limits_ = {limit(header, "max_keys"), limit(header, "max_waiters_per_key"), limit(header, "max_waiters")};
    if (nodes_ < 1 || clients_ < 1) fail(1, "a cluster trace needs at least one node and one client");
  }

  // The records of Trace, one per line.
  std::string convert(TlaTrace& result) {
    first_pass();
    std::string events;
    for (const auto& line : lines_) {
      const auto record = event(line, result);
      if (record.empty()) continue;
      events += (events.empty() ? "  " : ",\n  ") + record;
    }
    return events;
  }

  // Outcomes: per client, the answer to each of its requests by seq, as the
  // first Apply that produced it shows it (NoOutcome where none did).
  std::string outcomes() const {
    if (answers_.empty()) return "[c \\in {} |-> <<>>]";
    std::string text = "[";
    std::optional<std::string> last_client;
    std::int64_t next_seq = 1;
    for (const auto& [session, record] : answers_) {
      const auto& [client, seq] = session;
      if (client != last_client) {
        text += fmt::format("{}c{} |-> <<", !last_client ? "\n  " : ">>,\n  ", client);
        last_client = client;
        next_seq = 1;
      }
      for (; next_seq < seq; ++next_seq) text += std::string(next_seq > 1 ? ", " : "") + "<<\"\", \"\", 0, \"\", 0>>";
      text += (seq > 1 ? ", " : "") + record;
      next_seq = seq + 1;
    }
    return text + ">>\n]";
  }

  // Requests: per client, what each of its requests asked (LockCluster's
  // Asked), as its first Commit shows it (<<>> where none did).
  std::string requests() const {
    if (asked_.empty()) return "[c \\in {} |-> <<>>]";
    std::string text = "[";
    std::optional<std::string> last_client;
    std::int64_t next_seq = 1;
    for (const auto& [session, asked] : asked_) {
      const auto& [client, seq] = session;
      if (client != last_client) {
        text += fmt::format("{}c{} |-> <<", !last_client ? "\n  " : ">>,\n  ", client);
        last_client = client;
        next_seq = 1;
      }
      for (; next_seq < seq; ++next_seq) text += std::string(next_seq > 1 ? ", " : "") + "<<>>";
      text += (seq > 1 ? ", " : "") + asked;
      next_seq = seq + 1;
    }
    return text + ">>\n]";
  }

  std::string config() const {
    std::set<std::string> nodes, clients;
    for (std::int64_t n = 1; n <= nodes_; ++n) nodes.insert(fmt::format("n{}", n));
    // The simulator's clients are "1" to "<clients>"; any other id the
    // trace names is a client too.
    for (std::int64_t c = 1; c <= clients_; ++c) clients.insert(fmt::format("c{}", c));
    for (const auto& id : clients_seen_) clients.insert("c" + id);
    std::ostringstream config;
    config << "\\* The run's constants; Leases, Waits, MaxTerm, MaxLog and MaxSeq bound only\n"
           << "\\* the model checking of LockCluster, which trace validation does not use.\n"
           << "INIT TraceInit\nNEXT TraceSpecNext\n"
           << "CONSTANTS\n"
           << "  Nodes = " << set_text(nodes) << "\n"
           << "  Keys = " << set_text(keys_) << "\n"
           << "  Clients = " << set_text(clients) << "\n"
           << "  Leases = {1}\n  Waits = {0}\n"
           << "  MaxKeys = " << limits_[0] << "\n"
           << "  MaxWaitersPerKey = " << limits_[1] << "\n"
           << "  MaxWaiters = " << limits_[2] << "\n"
           << "  MaxSkew = " << skew_ << "\n"
           << "  MaxTime = " << std::min(max_now_ + 1, tlc_int_max) << "\n"
           << "  MaxTerm = " << tlc_int_max << "\n  MaxLog = " << tlc_int_max << "\n  MaxSeq = " << tlc_int_max << "\n"
           << "  Grace = " << grace_ << "\n  ReuseSeq = TRUE\n"
           << "  ExpireWithoutTokenCheck = FALSE\n  SkewBeyondBound = FALSE\n"
           << "  ApplyReadsClock = FALSE\n  NoSessionCheck = FALSE\n  GhostGrant = FALSE\n"
           << "  SessionWindow = " << window_ << "\n"
           << "VIEW TraceView\n"
           << "INVARIANT TraceInvariant\n";
    return config.str();
  }

 private:
  void first_pass() {
    std::vector<std::int64_t> committed;  // raft indexes, increasing
    for (const auto& line : lines_) {
      const auto& o = line.object;
      max_now_ = std::max(max_now_, number(o, "t", line.number) + skew_);
      if (line.event == "Commit") {
        committed.push_back(number(o, "index", line.number));
      } else if (line.event == "Elect") {
        // The spec counts terms by elections: the n-th Elect leads term n.
        terms_.emplace(number(o, "term", line.number), static_cast<std::int64_t>(terms_.size()) + 1);
      } else if (line.event == "Restore" || line.event == "Restart") {
        const auto index = number(o, "index", line.number);
        const auto position =
            static_cast<std::int64_t>(std::upper_bound(committed.begin(), committed.end(), index) - committed.begin());
        positions_.push_back(position);
        if (position > 0) kept_.insert(position);
      }
    }
  }

  std::string entry(const Json& c, std::uint64_t line) {
    const auto type = text(c, "type", line);
    if (type != "Acquire" && type != "Release" && type != "Expire" && type != "Timeout") {
      fail(line, fmt::format("a {} command: LockCluster has Acquire, Release, Expire and Timeout", type));
    }
    const auto key = text(c, "key", line);
    keys_.insert(key);
    const auto client = client_id(c, "client", line);
    if (!client.empty()) clients_seen_.insert(client);
    return fmt::format("<<\"{}\", {}, {}, {}, {}, {}, {}, {}, {}, {}>>", type, client_name(client),
                       number(c, "seq", line), tla_string(key), number(c, "lease_ms", line), number(c, "wait_ms", line),
                       number(c, "token", line), number(c, "stamp", line), node_name(number(c, "by", line)),
                       term_of(number(c, "epoch", line), line));
  }

  // A leadership's epoch (the Raft term) as the spec counts terms; 0 for a
  // request no leader stamped yet.
  std::int64_t term_of(std::int64_t epoch, std::uint64_t line) const {
    if (epoch == 0) return 0;
    const auto found = terms_.find(epoch);
    if (found == terms_.end()) fail(line, fmt::format("a command of term {}, whose leader's election is not traced", epoch));
    return found->second;
  }

  std::string entries(const Json& list, std::uint64_t line) {
    if (!list.is_array()) fail(line, "a list of commands is not a list");
    std::string out = "<<";
    for (const auto& c : list) out += (out.size() > 2 ? ", " : "") + entry(c, line);
    return out + ">>";
  }

  std::string response(const Json& r, std::uint64_t line) {
    return fmt::format("<<\"{}\", {}, {}, {}, {}>>", text(r, "kind", line), client_name(client_id(r, "client", line)),
                       number(r, "seq", line), tla_string(text(r, "key", line)), number(r, "token", line));
  }

  std::string view(const Json& v, std::uint64_t line) {
    if (!v.is_object()) fail(line, "the key's state is not an object");
    const auto& queue = member(v, "queue", line);
    if (!queue.is_array()) fail(line, "the key's queue is not a list");
    std::string waiters = "<<";
    for (const auto& w : queue) {
      if (!w.is_array() || w.size() != 2 || !w[0].is_string() || !w[1].is_number_unsigned() ||
          w[1].get<std::uint64_t>() > static_cast<std::uint64_t>(tlc_int_max)) {
        fail(line, "a waiter is not [client, seq]");
      }
      waiters += fmt::format("{}<<{}, {}>>", waiters.size() > 2 ? ", " : "", client_name(client_id(w[0], line)),
                             w[1].get<std::int64_t>());
    }
    return fmt::format("<<{}, {}, {}, {}>>", client_name(client_id(v, "holder", line)), number(v, "token", line),
                       number(v, "expiry", line), waiters + ">>");
  }

  // An event's tuple of Trace, and its line of the readable steps.
  struct Written {
    std::string record, summary;
  };

  std::string event(const Line& line, TlaTrace& result) {
    const auto& o = line.object;
    const auto n = line.number;
    const auto& event = line.event;
    Written written;
    if (event == "Elect") {
      written = elect_event(o, n, result);
    } else if (event == "Send") {
      written = send_event(o, n, result);
    } else if (event == "GiveUp") {
      written = give_up_event(o, n, result);
    } else if (event == "HeapDue") {
      written = heap_due_event(o, n, result);
    } else if (event == "Propose") {
      written = propose_event(o, n, result);
    } else if (event == "Commit") {
      written = commit_event(o, n);
    } else if (event == "Apply") {
      written = apply_event(o, n, result);
    } else if (event == "Restore" || event == "Restart") {
      written = restore_event(line, result);
    } else if (event == "Reply") {
      written = reply_event(o, n, result);
    } else {
      fail(n, fmt::format("'{}' is not an event of a cluster trace", event));
    }
    result.steps.push_back({n, number(o, "t", n), event, written.summary});
    return written.record;
  }

  Written elect_event(const Json& o, std::uint64_t n, TlaTrace& result) {
    Written written;
    const auto& adopted = member(o, "adopted", n);
    written.record = fmt::format("<<\"Elect\", {}, {}>>", node_name(number(o, "node", n)), entries(adopted, n));
    written.summary = fmt::format("n{} elected in term {}, with {} uncommitted entries {}", number(o, "node", n),
                                  number(o, "term", n), adopted.size(), show_commands(adopted));
    count(result, "Elect");
    return written;
  }

  Written send_event(const Json& o, std::uint64_t n, TlaTrace& result) {
    Written written;
    const auto& command = member(o, "command", n);
    const auto client = client_id(o, "client", n);
    if (!client.empty()) clients_seen_.insert(client);
    written.record = fmt::format("<<\"Send\", {}, {}>>", client_name(client), entry(command, n));
    written.summary = fmt::format("c{} sends {}", client, show_command(command));
    count(result, "Send");
    return written;
  }

  Written give_up_event(const Json& o, std::uint64_t n, TlaTrace& result) {
    Written written;
    const auto client = client_id(o, "client", n);
    if (!client.empty()) clients_seen_.insert(client);
    written.record = fmt::format("<<\"GiveUp\", {}>>", client_name(client));
    written.summary = fmt::format("c{} gives its request up", client);
    count(result, "GiveUp");
    return written;
  }

  Written heap_due_event(const Json& o, std::uint64_t n, TlaTrace& result) {
    Written written;
    const auto& due = member(o, "due", n);
    written.record = fmt::format("<<\"HeapDue\", {}, {}, {}, {}>>", node_name(number(o, "node", n)),
                                 number(o, "t", n) + skew_, number(o, "clock", n), entries(due, n));
    written.summary = fmt::format("n{}'s heap at its clock {} yields {}", number(o, "node", n), number(o, "clock", n),
                                  show_commands(due));
    count(result, "HeapDue");
    return written;
  }

  Written propose_event(const Json& o, std::uint64_t n, TlaTrace& result) {
    Written written;
    const auto& command = member(o, "command", n);
    written.record = fmt::format("<<\"Propose\", {}, {}, {}, {}>>", node_name(number(o, "node", n)),
                                 number(o, "t", n) + skew_, number(o, "clock", n), entry(command, n));
    written.summary = fmt::format("n{} proposes {} at index {}", number(o, "node", n), show_command(command),
                                  number(o, "index", n));
    const auto type = text(command, "type", n);
    count(result, type == "Expire" || type == "Timeout" ? "ProposeDue: " + type : "ProposeRequest");
    return written;
  }

  Written commit_event(const Json& o, std::uint64_t n) {
    Written written;
    const auto& command = member(o, "command", n);
    ++commits_;
    written.record =
        fmt::format("<<\"Commit\", {}, {}>>", entry(command, n), kept_.contains(commits_) ? "TRUE" : "FALSE");
    const auto type = text(command, "type", n);
    if (type == "Acquire" || type == "Release") {
      asked_.emplace(std::pair{client_id(command, "client", n), number(command, "seq", n)},
                     fmt::format("<<\"{}\", {}, {}, {}, {}>>", type, tla_string(text(command, "key", n)),
                                 number(command, "lease_ms", n), number(command, "wait_ms", n),
                                 number(command, "token", n)));
    }
    written.summary =
        fmt::format("index {} (position {}) committed: {}", number(o, "index", n), commits_, show_command(command));
    commit_ = command;
    return written;
  }

  Written apply_event(const Json& o, std::uint64_t n, TlaTrace& result) {
    Written written;
    const auto& out = member(o, "out", n);
    if (!out.is_array()) fail(n, "'out' is not a list");
    std::string outs = "<<";
    for (const auto& r : out) outs += (outs.size() > 2 ? ", " : "") + response(r, n);
    outs += ">>";
    const auto& key = member(o, "key", n);
    written.record = fmt::format("<<\"Apply\", {}, {}, {}>>", node_name(number(o, "node", n)), outs, view(key, n));
    written.summary = fmt::format("n{} applies index {}: sends {}; the key is {}", number(o, "node", n),
                                  number(o, "index", n), show_responses(out), show_view(key));
    count(result, "ApplyNext");
    record_answers(out, n);
    if (commit_) {
      classify_commit(*commit_, out, key, result, n);
      commit_.reset();
    }
    return written;
  }

  // Outcomes: the answers an Apply sent, but for errors and answers to no
  // client; the first one to each request is kept.
  void record_answers(const Json& out, std::uint64_t n) {
    for (const auto& r : out) {
      const auto kind = text(r, "kind", n);
      const auto client = client_id(r, "client", n);
      if (kind == "E" || client.empty()) continue;
      answers_.emplace(std::pair{client, number(r, "seq", n)}, response(r, n));
    }
  }

  // Restore and Restart.
  Written restore_event(const Line& line, TlaTrace& result) {
    const auto& o = line.object;
    const auto n = line.number;
    const auto& event = line.event;
    Written written;
    if (restores_seen_ >= positions_.size()) fail(n, "internal: restore positions out of step");
    const auto position = positions_[restores_seen_++];
    written.record = fmt::format("<<\"{}\", {}, {}>>", event, node_name(number(o, "node", n)), position);
    written.summary = event == "Restore"
                          ? fmt::format("n{} installs a snapshot of index {} (position {})", number(o, "node", n),
                                        number(o, "index", n), position)
                          : fmt::format("n{} starts again from its snapshot of index {} (position {})",
                                        number(o, "node", n), number(o, "index", n), position);
    count(result, event);
    return written;
  }

  Written reply_event(const Json& o, std::uint64_t n, TlaTrace& result) {
    Written written;
    const auto& r = member(o, "response", n);
    written.record = fmt::format("<<\"Reply\", {}, {}>>", node_name(number(o, "node", n)), response(r, n));
    written.summary = fmt::format("n{} sends {}", number(o, "node", n), show_response(r));
    count(result, "Reply");
    return written;
  }

  static void count(TlaTrace& result, const std::string& action) { ++result.coverage.actions[action]; }

  // The branch of Apply that the committed state took, from the first
  // application's responses and the key's state after it.
  void classify_commit(const Json& command, const Json& out, const Json& key, TlaTrace& result, std::uint64_t n) {
    const auto type = text(command, "type", n);
    const auto first_kind = out.empty() ? std::string() : out[0].value("kind", std::string());
    for (const auto& r : out) ++result.coverage.responses[r.value("kind", std::string("?"))];
    const auto name = text(command, "key", n);
    const auto token_before = key_token_[name];
    key_token_[name] = number(key, "token", n);
    const auto& queue = member(key, "queue", n);
    const auto queued_before = key_queue_[name];
    key_queue_[name] = static_cast<std::int64_t>(queue.is_array() ? queue.size() : 0);
    const auto answered_t = std::count_if(out.begin(), out.end(), [](const Json& r) { return r.value("kind", std::string()) == "T"; });
    const bool handed_on = token_before != number(key, "token", n) && !client_id(key, "holder", n).empty();
    if ((type == "Release" || type == "Expire") && answered_t > 0) count(result, "Commit: hand-off past due waiters");
    // Waiters that left a hand-off unanswered: detached by a leader change.
    if ((type == "Release" || type == "Expire") &&
        queued_before - key_queue_[name] > answered_t + (handed_on && token_before != 0 ? 1 : 0)) {
      count(result, "Commit: hand-off past detached waiters");
    }
    if (type == "Acquire" || type == "Release") {
      const auto session = std::pair{client_id(command, "client", n), number(command, "seq", n)};
      if (!committed_sessions_.insert(session).second) {
        count(result, first_kind == "E" ? "Commit: reused number refused" : "Commit: retry answered from its session");
        return;
      }
      if (type == "Acquire") {
        count(result, first_kind == "A"   ? "Commit: Acquire granted"
                      : first_kind == "T" ? "Commit: Acquire refused (wait 0)"
                      : first_kind == "B" ? "Commit: Acquire busy"
                                          : "Commit: Acquire queued");
      } else {
        count(result, first_kind == "N"                   ? "Commit: Release not held"
                      : !client_id(key, "holder", n).empty() ? "Commit: Release hand-off"
                                                          : "Commit: Release deleted");
      }
      return;
    }
    if (type == "Expire") {
      const bool took_effect = token_before == number(command, "token", n);
      count(result, !took_effect                      ? "Commit: Expire stale"
                    : !client_id(key, "holder", n).empty() ? "Commit: Expire hand-off"
                                                        : "Commit: Expire deletion");
      return;
    }
    count(result, !out.empty()                             ? "Commit: Timeout answered"
                  : key_queue_[name] < queued_before ? "Commit: Timeout drops a detached waiter"
                                                     : "Commit: Timeout stale");
  }

  std::vector<Line> lines_;
  std::int64_t nodes_ = 0, clients_ = 0, skew_ = 0, window_ = 0, grace_ = 0;
  std::map<std::int64_t, std::int64_t> terms_;  // Raft term -> the spec's (elections counted)
  std::map<std::pair<std::string, std::int64_t>, std::string> asked_;  // (client, seq) -> Asked, first Commit
  std::vector<std::int64_t> limits_;
  std::int64_t max_now_ = 0;
  std::set<std::string> keys_;
  std::set<std::int64_t> kept_;          // positions some snapshot restores
  std::vector<std::int64_t> positions_;  // of each Restore and Restart, in order
  std::size_t restores_seen_ = 0;
  std::int64_t commits_ = 0;
  std::optional<Json> commit_;  // the command of the Commit whose first Apply comes next
  std::set<std::pair<std::string, std::int64_t>> committed_sessions_;
  std::map<std::string, std::int64_t> key_token_;  // key -> its holder's token in the committed state, 0 if free
  std::map<std::string, std::int64_t> key_queue_;  // key -> its queue's length in the committed state
  std::map<std::pair<std::string, std::int64_t>, std::string> answers_;  // (client, seq) -> first answer seen
  std::set<std::string> clients_seen_;  // every client id an entry or a Send names
};

}  // namespace

const std::vector<std::string>& cluster_coverage_actions() {
  static const std::vector<std::string> names{
      "Elect",
      "Send",
      "GiveUp",
      "HeapDue",
      "ProposeRequest",
      "ProposeDue: Timeout",
      "ProposeDue: Expire",
      "Commit: Acquire granted",
      "Commit: Acquire queued",
      "Commit: Acquire refused (wait 0)",
      "Commit: Acquire busy",
      "Commit: Release deleted",
      "Commit: Release hand-off",
      "Commit: Release not held",
      "Commit: retry answered from its session",
      "Commit: reused number refused",
      "Commit: Expire hand-off",
      "Commit: Expire deletion",
      "Commit: Expire stale",
      "Commit: Timeout answered",
      "Commit: Timeout stale",
      "Commit: Timeout drops a detached waiter",
      "Commit: hand-off past due waiters",
      "Commit: hand-off past detached waiters",
      "ApplyNext",
      "Restore",
      "Restart",
      "Reply",
  };
  return names;
}

TlaTrace cluster_trace_to_tla(const Json& header, std::istream& rest, const std::string& module_name,
                              std::string_view trace_spec) {
  std::vector<Line> lines;
  std::string raw;
  std::uint64_t number = 1;
  while (std::getline(rest, raw)) {
    ++number;
    if (raw.empty()) continue;
    Line line;
    line.number = number;
    try {
      line.object = Json::parse(raw);
    } catch (const Json::exception& e) {
      fail(number, fmt::format("not JSON: {}", e.what()));
    }
    if (!line.object.is_object()) fail(number, "not a JSON object");
    line.event = text(line.object, "event", number);
    if (line.event == "Run") fail(number, "a second Run header");
    if (line.event == "End") continue;
    lines.push_back(std::move(line));
  }
  TlaTrace result;
  result.mode = TraceMode::cluster;
  result.module_name = module_name;
  result.seed = header.value("seed", std::uint64_t{0});
  result.bug = header.value("bug", std::string("none"));
  Converter converter(header, std::move(lines));
  const auto events = converter.convert(result);
  result.module_text = module_with_definitions(trace_spec, "TraceLockCluster", module_name,
                                               fmt::format("The trace: seed {}, bug {}", result.seed, result.bug),
                                               {{"Trace", "<<\n" + events + "\n>>"},
                                                {"Outcomes", converter.outcomes()},
                                                {"Requests", converter.requests()}});
  result.config_text = converter.config();
  return result;
}

}  // namespace lockstep::sim
