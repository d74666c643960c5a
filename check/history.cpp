// NDJSON reading and writing of histories. The reader is strict: a history
// that cannot be read exactly is refused with the line at fault, because a
// checker that guessed at a damaged file could pass a broken server.
#include "check/history.hpp"

#include <fstream>
#include <istream>
#include <optional>
#include <ostream>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace lockstep::history {

namespace {

using nlohmann::json;

constexpr EventKind all_kinds[] = {EventKind::connect, EventKind::send, EventKind::recv, EventKind::close,
                                   EventKind::eof,     EventKind::down, EventKind::up,  EventKind::nemesis};

std::optional<EventKind> kind_from_name(const std::string& name) {
  for (const auto kind : all_kinds) {
    if (name == event_kind_name(kind)) return kind;
  }
  return std::nullopt;
}

bool has_line(EventKind kind) { return kind == EventKind::send || kind == EventKind::recv; }
bool has_conn(EventKind kind) {
  return kind != EventKind::down && kind != EventKind::up && kind != EventKind::nemesis;
}
// The JSON name of an event's text: what was sent or read, or what the
// nemesis did.
const char* text_field(EventKind kind) { return kind == EventKind::nemesis ? "what" : "line"; }
bool has_text(EventKind kind) { return has_line(kind) || kind == EventKind::nemesis; }

json limits_json(const Limits& limits) {
  return json{{"max_keys", limits.max_keys},
              {"max_waiters_per_key", limits.max_waiters_per_key},
              {"max_waiters", limits.max_waiters},
              {"sweep_ms", limits.sweep_ms.value},
              {"max_lease_ms", limits.max_lease_ms.value},
              {"max_wait_ms", limits.max_wait_ms.value},
              {"max_line_bytes", limits.max_line_bytes}};
}

// The header's limits: every name must be a limit, and the result valid.
std::optional<std::string> read_limits(const json& object, Limits& limits) {
  if (!object.is_object()) return "\"limits\" must be an object";
  for (const auto& [name, value] : object.items()) {
    if (!value.is_number_unsigned()) return fmt::format("limit {} must be a non-negative integer", name);
    if (auto error = set_limit(limits, name, std::to_string(value.get<std::uint64_t>()))) return *error;
  }
  return validate(limits);
}

std::variant<Header, std::string> read_header(const json& object) {
  Header header;
  if (!object.is_object() || !object.contains("schema")) return std::string("the first line must be the header");
  if (object["schema"] != schema_name) {
    return fmt::format("unknown schema {} (this checker reads {})", object["schema"].dump(), schema_name);
  }
  if (object.contains("limits")) {
    if (auto error = read_limits(object["limits"], header.limits)) return *error;
  }
  if (object.contains("tolerance_ms")) {
    const auto& tolerance = object["tolerance_ms"];
    if (!tolerance.is_number_unsigned() || tolerance.get<std::uint64_t>() > 3'600'000) {
      return std::string("tolerance_ms must be an integer from 0 to 3600000");
    }
    header.tolerance_ms = tolerance.get<std::int64_t>();
  }
  if (object.contains("handled_within_ms")) {
    const auto& within = object["handled_within_ms"];
    if (!within.is_number_unsigned() || within.get<std::uint64_t>() > 3'600'000) {
      return std::string("handled_within_ms must be an integer from 0 to 3600000");
    }
    header.handled_within_ms = within.get<std::int64_t>();
  }
  if (object.contains("mode")) {
    const auto& mode = object["mode"];
    if (mode == "simple") {
      header.mode = Mode::simple;
    } else if (mode == "cluster") {
      header.mode = Mode::cluster;
    } else {
      return fmt::format("mode must be \"simple\" or \"cluster\", not {}", mode.dump());
    }
  }
  if (object.contains("clock_allowance_ms")) {
    const auto& allowance = object["clock_allowance_ms"];
    if (!allowance.is_number_unsigned() || allowance.get<std::uint64_t>() > 3'600'000) {
      return std::string("clock_allowance_ms must be an integer from 0 to 3600000");
    }
    header.clock_allowance_ms = allowance.get<std::int64_t>();
  }
  if (object.contains("max_lateness_ms")) {
    const auto& lateness = object["max_lateness_ms"];
    if (!lateness.is_number_unsigned() || lateness.get<std::uint64_t>() > 86'400'000) {
      return std::string("max_lateness_ms must be an integer from 0 to 86400000");
    }
    header.max_lateness_ms = lateness.get<std::int64_t>();
  }
  if (header.mode == Mode::simple && (object.contains("clock_allowance_ms") || object.contains("max_lateness_ms"))) {
    return std::string("clock_allowance_ms and max_lateness_ms belong to \"mode\":\"cluster\"");
  }
  if (object.contains("target") && object["target"].is_string()) header.target = object["target"];
  if (object.contains("seed") && object["seed"].is_number_unsigned()) header.seed = object["seed"];
  return header;
}

std::variant<Event, std::string> read_event(const json& object) {
  Event event;
  if (!object.is_object()) return std::string("an event must be an object");
  if (!object.contains("t_us") || !object["t_us"].is_number_integer() || object["t_us"].get<std::int64_t>() < 0) {
    return std::string("t_us must be a non-negative integer");
  }
  event.t_us = object["t_us"];
  if (!object.contains("ev") || !object["ev"].is_string()) return std::string("ev must be a string");
  const auto kind = kind_from_name(object["ev"]);
  if (!kind) return fmt::format("unknown event {}", object["ev"].dump());
  event.kind = *kind;
  if (has_conn(event.kind)) {
    if (!object.contains("conn") || !object["conn"].is_number_unsigned() ||
        object["conn"].get<std::uint64_t>() > 0xffff'ffffu) {
      return std::string("conn must be an integer from 0 to 4294967295");
    }
    event.conn = object["conn"];
  }
  if (has_text(event.kind)) {
    const char* field = text_field(event.kind);
    if (!object.contains(field) || !object[field].is_string()) return fmt::format("{} must be a string", field);
    event.line = object[field];
    if (event.line.find('\n') != std::string::npos) return fmt::format("{} must not contain a newline", field);
  }
  if (object.contains("after_us")) {
    if (event.kind != EventKind::recv || !object["after_us"].is_number_integer() ||
        object["after_us"].get<std::int64_t>() < 0 || object["after_us"].get<std::int64_t>() > event.t_us) {
      return std::string("after_us belongs to recv events and must be an integer from 0 to t_us");
    }
    event.after_us = object["after_us"];
  }
  return event;
}

// The common event, read without building a JSON value: a flat object of
// the fields an event has, integers and strings with simple escapes. It
// accepts exactly the events read_event accepts and refuses only by giving
// up, so anything unusual (and every error, with its message) goes the
// general way.
class FlatReader {
 public:
  explicit FlatReader(std::string_view text) : text_(text) {}

  std::optional<Event> event() {
    std::optional<std::int64_t> t_us, after_us;
    std::optional<std::uint64_t> conn;
    std::optional<std::string> ev, line;
    if (!take('{')) return std::nullopt;
    for (bool first = true;; first = false) {
      skip_space();
      if (peek() == '}' && first) break;
      std::string name;
      if (!string(name) || !take(':')) return std::nullopt;
      skip_space();
      bool read = false;
      if (name == "t_us" && !t_us) read = integer(t_us.emplace());
      if (name == "after_us" && !after_us) read = integer(after_us.emplace());
      if (name == "conn" && !conn) {
        std::int64_t value = -1;
        read = integer(value) && value <= 0xffff'ffffLL;
        conn = static_cast<std::uint64_t>(value);
      }
      if (name == "ev" && !ev) read = string(ev.emplace());
      if (name == "line" && !line) read = string(line.emplace());
      if (!read) return std::nullopt;
      skip_space();
      if (take('}')) break;
      if (!take(',')) return std::nullopt;
    }
    skip_space();
    if (at_ < text_.size() || !t_us || !ev) return std::nullopt;
    const auto kind = kind_from_name(*ev);
    if (!kind || *kind == EventKind::nemesis) return std::nullopt;  // rare: the general way
    if (has_conn(*kind) != conn.has_value() || has_line(*kind) != line.has_value()) return std::nullopt;
    if (line && line->find('\n') != std::string::npos) return std::nullopt;
    if (after_us && (*kind != EventKind::recv || *after_us > *t_us)) return std::nullopt;
    Event event;
    event.t_us = *t_us;
    event.kind = *kind;
    if (conn) event.conn = static_cast<std::uint32_t>(*conn);
    if (line) event.line = std::move(*line);
    if (after_us) event.after_us = *after_us;
    return event;
  }

 private:
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\r')) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (peek() != c) return false;
    ++at_;
    return true;
  }
  // A non-negative integer of at most 18 digits, no leading zeros.
  bool integer(std::int64_t& value) {
    const auto start = at_;
    value = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9' && at_ - start < 18) {
      value = value * 10 + (text_[at_] - '0');
      ++at_;
    }
    const auto digits = at_ - start;
    if (digits == 0 || (digits > 1 && text_[start] == '0')) return false;
    const char next = peek();
    return !(next >= '0' && next <= '9') && next != '.' && next != 'e' && next != 'E';
  }
  bool string(std::string& out) {
    if (!take('"')) return false;
    while (at_ < text_.size()) {
      // A run of plain characters is copied at once.
      const auto run = at_;
      while (at_ < text_.size() && plain(text_[at_])) ++at_;
      out.append(text_.data() + run, at_ - run);
      if (at_ >= text_.size()) return false;
      const char c = text_[at_++];
      if (c == '"') return true;
      if (c != '\\') return false;  // a control character, or not ASCII: the general way
      if (at_ >= text_.size()) return false;
      switch (text_[at_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        default: return false;  // \u and anything else: the general way
      }
    }
    return false;
  }

  // Neither the end of a string, nor an escape, nor a byte the general
  // way must read (a control character or one past ASCII).
  static bool plain(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte < 0x80 && c != '"' && c != '\\';
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::connect: return "connect";
    case EventKind::send: return "send";
    case EventKind::recv: return "recv";
    case EventKind::close: return "close";
    case EventKind::eof: return "eof";
    case EventKind::down: return "down";
    case EventKind::up: return "up";
    case EventKind::nemesis: return "nemesis";
  }
  return "?";
}

const char* mode_name(Mode mode) { return mode == Mode::cluster ? "cluster" : "simple"; }

std::string header_line(const Header& header) {
  json object{{"schema", schema_name},
              {"limits", limits_json(header.limits)},
              {"tolerance_ms", header.tolerance_ms},
              {"target", header.target},
              {"seed", header.seed}};
  if (header.handled_within_ms >= 0) object["handled_within_ms"] = header.handled_within_ms;
  if (header.mode == Mode::cluster) {
    object["mode"] = mode_name(header.mode);
    object["clock_allowance_ms"] = header.clock_allowance_ms;
    if (header.max_lateness_ms >= 0) object["max_lateness_ms"] = header.max_lateness_ms;
  }
  return object.dump();
}

std::string event_line(const Event& event) {
  json object{{"t_us", event.t_us}, {"ev", event_kind_name(event.kind)}};
  if (has_conn(event.kind)) object["conn"] = event.conn;
  // Lines are not always valid UTF-8 (a fuzzer sends any bytes): replace
  // what cannot be written rather than failing the whole record.
  if (has_text(event.kind)) object[text_field(event.kind)] = event.line;
  if (event.kind == EventKind::recv && event.after_us >= 0) object["after_us"] = event.after_us;
  return object.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::variant<History, ReadError> read_history(std::istream& in) {
  History history;
  std::string text;
  std::size_t number = 0;
  bool have_header = false;
  while (std::getline(in, text)) {
    ++number;
    if (text.empty()) continue;
    if (have_header) {
      if (auto fast = FlatReader(text).event()) {
        if (!history.events.empty() && fast->t_us < history.events.back().t_us) {
          return ReadError{number, "t_us goes back: events must be in the order recorded"};
        }
        history.events.push_back(std::move(*fast));
        continue;
      }
    }
    json object = json::parse(text, nullptr, false);
    if (object.is_discarded()) return ReadError{number, "not a JSON object"};
    if (!have_header) {
      auto header = read_header(object);
      if (auto* error = std::get_if<std::string>(&header)) return ReadError{number, *error};
      history.header = std::get<Header>(header);
      have_header = true;
      continue;
    }
    auto event = read_event(object);
    if (auto* error = std::get_if<std::string>(&event)) return ReadError{number, *error};
    auto& read = std::get<Event>(event);
    if (!history.events.empty() && read.t_us < history.events.back().t_us) {
      return ReadError{number, "t_us goes back: events must be in the order recorded"};
    }
    history.events.push_back(std::move(read));
  }
  if (!have_header) return ReadError{number, "empty file: no header"};
  return history;
}

std::variant<History, ReadError> read_history_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ReadError{0, fmt::format("cannot open {}", path)};
  return read_history(in);
}

void write_history(std::ostream& out, const History& history) {
  out << header_line(history.header) << '\n';
  for (const auto& event : history.events) out << event_line(event) << '\n';
}

}  // namespace lockstep::history
