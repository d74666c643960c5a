#include "sim/simple/trace.hpp"

#include <nlohmann/json.hpp>

#include "sim/simple/server_node.hpp"

namespace lockstep::sim {

namespace {

using Json = nlohmann::ordered_json;  // fields in the order written: stable bytes

const char* world_name(WorldEvent event) {
  switch (event) {
    case WorldEvent::connect: return "Connect";
    case WorldEvent::send: return "Send";
    case WorldEvent::receive: return "Receive";
    case WorldEvent::drop: return "Drop";
    case WorldEvent::crash: return "Crash";
    case WorldEvent::revive: return "Revive";
    case WorldEvent::reset: return "Reset";
    case WorldEvent::lost: return "Lost";
    case WorldEvent::server_down: return "ServerDown";
  }
  return "Unknown";
}

Json outputs(const ServerStep& step) {
  Json list = Json::array();
  for (std::size_t i = step.first; i < step.out.size(); ++i) {
    list.push_back(Json{{"conn", step.out[i].connection.value},
                        {"line", format_response(step.out[i].response)}});
  }
  return list;
}

}  // namespace

TraceWriter::TraceWriter(std::ostream& out, const SimParams& params) : out_(out), params_(params) {
  Json header{{"schema", trace_schema},
              {"event", "Run"},
              {"seed", params.seed},
              {"bug", std::string(bug_name(params.bug))},
              {"server_fault", server_fault_name(params.server_fault)},
              {"sweep_ms", params.limits.sweep_ms.value},
              {"params", describe(params)}};
  out_ << header.dump() << '\n';
  ++lines_;
}

void TraceWriter::server_step(const ServerStep& step, const SimpleServerNode& server) {
  Json line{{"t", step.at.value}};
  switch (step.action) {
    case ServerAction::acquire:
    case ServerAction::release: {
      const auto parsed = parse_request(step.line, params_.limits);
      const auto* request = std::get_if<Request>(&parsed);
      if (request && std::holds_alternative<AcquireRequest>(*request)) {
        const auto& a = std::get<AcquireRequest>(*request);
        line["event"] = "Acquire";
        line["conn"] = step.connection.value;
        line["key"] = std::string(a.key);
        line["owner"] = std::string(a.owner);
        line["lease_ms"] = a.lease_ms.value;
        line["wait_ms"] = a.wait_ms.value;
      } else if (request) {
        const auto& r = std::get<ReleaseRequest>(*request);
        line["event"] = "Release";
        line["conn"] = step.connection.value;
        line["key"] = std::string(r.key);
        line["token"] = r.token.value;
      } else {
        line["event"] = "Malformed";
        line["conn"] = step.connection.value;
        line["line"] = std::string(step.line);
      }
      line["out"] = outputs(step);
      break;
    }
    case ServerAction::close:
      line["event"] = "Close";
      line["conn"] = step.connection.value;
      line["out"] = outputs(step);
      break;
    case ServerAction::tick: {
      // Time advances to t and fires what is due there: timeouts, then,
      // at a sweep instant, the sweep (its hand-offs are the A responses).
      line["event"] = "Tick";
      Json timeouts = Json::array();
      Json handoffs = Json::array();
      for (std::size_t i = step.first; i < step.out.size(); ++i) {
        const auto& o = step.out[i];
        if (o.response.kind == ResponseKind::timed_out) {
          timeouts.push_back(Json{{"conn", o.connection.value}, {"owner", o.response.owner}, {"key", o.response.key}});
        } else {
          handoffs.push_back(Json{{"conn", o.connection.value}, {"owner", o.response.owner},
                                  {"key", o.response.key}, {"token", o.response.token.value}});
        }
      }
      line["Timeout"] = timeouts;
      if (step.at.value % params_.limits.sweep_ms.value == 0) {
        const auto deleted = server.engine().counters().sweep_deletions;
        line["Sweep"] = Json{{"handoffs", handoffs}, {"deleted", deleted - sweep_deletions_seen_}};
        sweep_deletions_seen_ = deleted;
      }
      line["out"] = outputs(step);
      break;
    }
    case ServerAction::restart:
      line["event"] = "Restart";
      line["incarnation"] = server.incarnation();
      line["first_token"] = server.engine().token_mark().value + 1;
      sweep_deletions_seen_ = 0;
      break;
  }
  out_ << line.dump() << '\n';
  ++lines_;
}

void TraceWriter::world(TimeMs at, WorldEvent event, std::uint32_t client, ConnectionId connection,
                        std::string_view text) {
  Json line{{"t", at.value}, {"event", world_name(event)}};
  if (event != WorldEvent::server_down) {
    line["client"] = client;
    if (connection.value != 0) line["conn"] = connection.value;
  }
  if (!text.empty()) line["line"] = std::string(text);
  out_ << line.dump() << '\n';
  ++lines_;
}

void TraceWriter::finish(TimeMs at, std::uint64_t violations, std::uint64_t event_hash) {
  Json line{{"t", at.value}, {"event", "End"}, {"violations", violations}, {"event_hash", event_hash}};
  out_ << line.dump() << '\n';
  ++lines_;
}

}  // namespace lockstep::sim
