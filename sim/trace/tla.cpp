#include "sim/trace/tla.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "impl/protocol.hpp"
#include "sim/cluster/trace.hpp"
#include "sim/simple/trace.hpp"
#include "sim/trace/tla_text.hpp"

namespace lockstep::sim {

namespace {

using namespace tla_text;

// The LockServer constants the run fixes, read from the header's `params`
// (`name=value` words, sim/simple/params.cpp's describe()).
struct RunLimits {
  std::int64_t sweep_ms = 0, max_keys = -1, max_waiters_per_key = -1, max_waiters = -1;
};

RunLimits read_limits(const Json& header, std::uint64_t line) {
  RunLimits limits;
  limits.sweep_ms = number(header, "sweep_ms", line);
  std::istringstream words(text(header, "params", line));
  std::string word;
  while (words >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    const auto name = word.substr(0, eq);
    std::int64_t* slot = name == "max_keys"              ? &limits.max_keys
                         : name == "max_waiters_per_key" ? &limits.max_waiters_per_key
                         : name == "max_waiters"         ? &limits.max_waiters
                                                         : nullptr;
    if (slot == nullptr) continue;
    try {
      *slot = std::min<std::int64_t>(std::stoll(word.substr(eq + 1)), tlc_int_max);
    } catch (const std::exception&) {
      fail(line, fmt::format("params: '{}' is not a number", word));
    }
  }
  if (limits.sweep_ms <= 0) fail(line, "sweep_ms must be at least 1");
  if (limits.max_keys < 0 || limits.max_waiters_per_key < 0 || limits.max_waiters < 0) {
    fail(line, "params must name max_keys, max_waiters_per_key and max_waiters");
  }
  return limits;
}

struct Names {
  std::set<std::string> keys, owners;
  std::set<std::int64_t> conns;
};

// One response record of the spec: Response(kind, conn, owner, key, token),
// with NoOwner ("") and NoToken (0) where the wire line has none.
struct Out {
  char kind = '?';
  std::string record;
};

Out response_record(const Json& item, std::uint64_t line, Names& names) {
  const auto conn = number(item, "conn", line);
  const auto wire = text(item, "line", line);
  const auto response = parse_response(wire);
  if (!response) fail(line, fmt::format("'{}' is not a response line", wire));
  const char kind = static_cast<char>(response->kind);
  if (response->kind == ResponseKind::error) {
    fail(line, fmt::format("'{}': the spec does not model malformed requests", wire));
  }
  const bool has_owner = kind == 'A' || kind == 'T' || kind == 'B';
  const bool has_token = kind == 'A' || kind == 'R' || kind == 'N';
  const auto token = static_cast<std::int64_t>(response->token.value);
  if (has_token && (token <= 0 || token > tlc_int_max)) fail(line, fmt::format("token of '{}' is outside 1..{}", wire, tlc_int_max));
  names.conns.insert(conn);
  names.keys.insert(response->key);
  if (has_owner) names.owners.insert(response->owner);
  // <<kind, conn, owner, key, token>>: LockServer's Response by position,
  // "" (NoOwner) and 0 (NoToken) where the line has none.
  return {kind, fmt::format("<<\"{}\", {}, {}, {}, {}>>", kind, conn,
                            has_owner ? tla_string(response->owner) : std::string("\"\""),
                            tla_string(response->key), has_token ? token : 0)};
}

std::string wire_list(const Json& out) {
  std::string text = "[";
  for (const auto& item : out) {
    if (text.size() > 1) text += ", ";
    text += fmt::format("c{}: {}", item.value("conn", 0), item.value("line", std::string()));
  }
  return text + "]";
}

void count(TraceCoverage& coverage, const std::string& action) { ++coverage.actions[action]; }

Json parse_line(const std::string& raw, std::uint64_t line) {
  Json object;
  try {
    object = Json::parse(raw);
  } catch (const Json::exception& e) {
    fail(line, fmt::format("not JSON: {}", e.what()));
  }
  if (!object.is_object()) fail(line, "not a JSON object");
  return object;
}

// Simple mode, in the shape of the cluster's converter (cluster_tla.cpp):
// one method per kind of step, each giving the step's record of Trace and
// its summary, and counting what it covered; the module and config come
// last, from the names and the latest instant seen.
class SimpleConverter {
 public:
  SimpleConverter(const Json& header, const std::string& module_name) : limits_(read_limits(header, 1)) {
    result_.mode = TraceMode::simple;
    result_.module_name = module_name;
    result_.seed = header.value("seed", std::uint64_t{0});
    result_.bug = header.value("bug", std::string("none"));
    if (result_.bug == "none") result_.bug = header.value("server_fault", std::string("none"));
  }

  // The header (line 1) is read; the server steps follow.
  TlaTrace convert(std::istream& ndjson, std::string_view trace_spec) {
    std::string raw;
    std::uint64_t line = 1;
    while (std::getline(ndjson, raw)) {
      ++line;
      if (!raw.empty()) step(parse_line(raw, line), line);
    }
    // Tokens: the spec issues them from 1 and a restart may move them on; the
    // trace's own bound is not needed (the trace spec never sends a request of
    // its own), but the constant must be a number.
    result_.module_text = module_with_trace(trace_spec, "TraceLockServer", result_.module_name,
                                            fmt::format("The trace: seed {}, bug {}", result_.seed, result_.bug), events_);
    result_.config_text = config_text();
    return std::move(result_);
  }

 private:
  // A step's record and summary (what `step` adds to the trace).
  struct Record {
    std::string record, summary;
  };

  void step(const Json& object, std::uint64_t line) {
    const auto event = text(object, "event", line);
    if (event == "Run") fail(line, "a second Run header");
    const bool is_step = event == "Acquire" || event == "Release" || event == "Close" || event == "Tick" ||
                         event == "Restart";
    if (event == "Malformed") fail(line, "a Malformed step: the spec does not model malformed requests");
    if (!is_step) return;  // the world's events: not steps of the server

    const auto t = number(object, "t", line);
    std::vector<Out> outs;
    const auto out_it = object.find("out");
    if (out_it != object.end()) {
      if (!out_it->is_array()) fail(line, "'out' is not a list");
      for (const auto& item : *out_it) outs.push_back(response_record(item, line, names_));
    }
    std::string out_text = "<<";
    for (const auto& o : outs) {
      out_text += (out_text.size() > 2 ? ", " : "") + o.record;
      ++result_.coverage.responses[std::string(1, o.kind)];
    }
    out_text += ">>";
    const auto first_kind = outs.empty() ? '-' : outs.front().kind;
    auto [record, summary] = event == "Acquire" ? acquire(object, line, t, out_text, first_kind)
                             : event == "Release" ? release(object, line, t, out_text, first_kind, outs.size())
                             : event == "Close"   ? close(object, line, t, out_text)
                             : event == "Tick"    ? tick(object, line, t, out_text, outs)
                                                  : restart(object, line, t);
    if (out_it != object.end()) summary += " sent " + wire_list(*out_it);
    max_time_ = std::max(max_time_, t);
    events_ += (events_.empty() ? "  " : ",\n  ") + record;
    result_.steps.push_back({line, t, event, summary});
  }

  Record acquire(const Json& object, std::uint64_t line, std::int64_t t, const std::string& out_text, char first_kind) {
    const auto conn = number(object, "conn", line);
    const auto key = text(object, "key", line), owner = text(object, "owner", line);
    const auto lease = number(object, "lease_ms", line), wait = number(object, "wait_ms", line);
    names_.conns.insert(conn);
    names_.keys.insert(key);
    names_.owners.insert(owner);
    max_time_ = std::max(max_time_, t + wait);
    count(result_.coverage, first_kind == 'A'   ? "Acquire: granted"
                            : first_kind == 'T' ? "Acquire: refused (wait 0)"
                            : first_kind == 'B' ? "Acquire: busy"
                                                : "Acquire: queued");
    return {fmt::format("<<\"Acquire\", {}, {}, {}, {}, {}, {}, {}>>", t, conn, tla_string(key), tla_string(owner),
                        lease, wait, out_text),
            fmt::format("Acquire on c{}: 'A {} {} {} {}'", conn, key, owner, lease, wait)};
  }

  Record release(const Json& object, std::uint64_t line, std::int64_t t, const std::string& out_text, char first_kind,
                 std::size_t outs) {
    const auto conn = number(object, "conn", line);
    const auto key = text(object, "key", line);
    const auto token = number(object, "token", line);
    names_.conns.insert(conn);
    names_.keys.insert(key);
    count(result_.coverage, first_kind == 'N' ? "Release: not held"
                            : outs > 1        ? "Release: hand-off"
                                              : "Release: deleted");
    return {fmt::format("<<\"Release\", {}, {}, {}, {}, {}>>", t, conn, tla_string(key), token, out_text),
            fmt::format("Release on c{}: 'R {} {}'", conn, key, token)};
  }

  Record close(const Json& object, std::uint64_t line, std::int64_t t, const std::string& out_text) {
    const auto conn = number(object, "conn", line);
    names_.conns.insert(conn);
    count(result_.coverage, "Close");
    return {fmt::format("<<\"Close\", {}, {}, {}>>", t, conn, out_text), fmt::format("Close of c{}", conn)};
  }

  Record tick(const Json& object, std::uint64_t line, std::int64_t t, const std::string& out_text,
              const std::vector<Out>& outs) {
    std::int64_t deleted = -1;
    std::size_t handoffs = 0;
    if (const auto sweep = object.find("Sweep"); sweep != object.end()) {
      deleted = number(*sweep, "deleted", line);
      handoffs = sweep->contains("handoffs") ? (*sweep)["handoffs"].size() : 0;
    }
    const auto timeouts =
        static_cast<std::size_t>(std::count_if(outs.begin(), outs.end(), [](const Out& o) { return o.kind == 'T'; }));
    if (timeouts > 0) count(result_.coverage, "Tick: timeouts");
    if (handoffs > 0) count(result_.coverage, "Tick: sweep hand-off");
    if (deleted > 0) count(result_.coverage, "Tick: sweep deletion");
    return {fmt::format("<<\"Tick\", {}, {}, {}, {}>>", t, deleted >= 0 ? "TRUE" : "FALSE",
                        std::max<std::int64_t>(deleted, 0), out_text),
            fmt::format("Tick to {}{}", t, deleted >= 0 ? fmt::format(" (sweep: {} deleted)", deleted) : "")};
  }

  Record restart(const Json& object, std::uint64_t line, std::int64_t t) {
    const auto first_token = number(object, "first_token", line);
    count(result_.coverage, "Restart");
    return {fmt::format("<<\"Restart\", {}, {}, <<>>>>", t, first_token),
            fmt::format("Restart (first token {})", first_token)};
  }

  std::string config_text() const {
    const auto max_time_tla = std::min(max_time_ + 1, tlc_int_max);
    std::ostringstream config;
    config << "\\* The run's constants; Leases, Waits and MaxToken bound only the spec's own\n"
           << "\\* requests, which trace validation never makes.\n"
           << "INIT TraceInit\nNEXT TraceSpecNext\n"
           << "CONSTANTS\n"
           << "  Keys = " << set_text(names_.keys) << "\n"
           << "  Owners = " << set_text(names_.owners) << "\n"
           << "  Conns = " << set_text(names_.conns) << "\n"
           << "  Leases = {1}\n  Waits = {0}\n"
           << "  SweepMs = " << limits_.sweep_ms << "\n"
           << "  MaxKeys = " << limits_.max_keys << "\n"
           << "  MaxWaitersPerKey = " << limits_.max_waiters_per_key << "\n"
           << "  MaxWaiters = " << limits_.max_waiters << "\n"
           << "  MaxTime = " << max_time_tla << "\n"
           << "  MaxToken = " << tlc_int_max << "\n"
           << "  LifoHandoff = FALSE\n  SweepFirst = FALSE\n"
           << "VIEW TraceView\n"
           << "INVARIANT TraceInvariant\n";
    return config.str();
  }

  const RunLimits limits_;
  TlaTrace result_;
  Names names_;
  std::string events_;  // the records of Trace, one per line
  std::int64_t max_time_ = 0;
};

TlaTrace simple_trace_to_tla(const Json& header, std::istream& ndjson, const std::string& module_name,
                             std::string_view trace_spec) {
  return SimpleConverter(header, module_name).convert(ndjson, trace_spec);
}

}  // namespace

std::string_view trace_mode_name(TraceMode mode) { return mode == TraceMode::cluster ? "cluster" : "simple"; }

void TraceCoverage::merge(const TraceCoverage& other) {
  for (const auto& [name, n] : other.actions) actions[name] += n;
  for (const auto& [name, n] : other.responses) responses[name] += n;
}

const std::vector<std::string>& coverage_actions(TraceMode mode) {
  static const std::vector<std::string> simple{
      "Acquire: granted",   "Acquire: queued",      "Acquire: refused (wait 0)", "Acquire: busy",
      "Release: deleted",   "Release: hand-off",    "Release: not held",         "Close",
      "Tick: timeouts",     "Tick: sweep hand-off", "Tick: sweep deletion",      "Restart"};
  return mode == TraceMode::cluster ? cluster_coverage_actions() : simple;
}

const std::vector<std::string>& coverage_responses(TraceMode) {
  static const std::vector<std::string> names{"A", "T", "B", "R", "N"};
  return names;
}

TlaTrace trace_to_tla(std::istream& ndjson, const std::string& module_name, const TraceSpecs& specs) {
  std::string raw;
  if (!std::getline(ndjson, raw) || raw.empty()) throw TraceFormatError("trace: empty (no Run header)");
  const Json header = parse_line(raw, 1);
  if (header.value("event", std::string()) != "Run") fail(1, "the first line must be the Run header");
  const auto schema = header.value("schema", std::string());
  if (schema == cluster_trace_schema) return cluster_trace_to_tla(header, ndjson, module_name, specs.cluster);
  if (schema != trace_schema) fail(1, fmt::format("unknown schema '{}'", schema));
  return simple_trace_to_tla(header, ndjson, module_name, specs.server);
}

std::string locate_config(const TlaTrace& trace) {
  std::string config = trace.config_text;
  const std::string fast = "NEXT TraceSpecNext\n";
  const auto at = config.find(fast);
  if (at != std::string::npos) config.replace(at, fast.size(), "NEXT TraceLocateNext\n");
  return config;
}

}  // namespace lockstep::sim
