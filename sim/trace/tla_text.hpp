// What the two trace converters (sim/trace/tla.cpp for simple mode,
// sim/trace/cluster_tla.cpp for cluster mode) share: reading fields of a
// trace line, writing TLA+ literals, and putting the trace into a copy of
// its trace spec.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/trace/tla.hpp"

namespace lockstep::sim::tla_text {

using Json = nlohmann::json;

// TLC's integers are 32-bit: every number of the trace must fit.
inline constexpr std::int64_t tlc_int_max = std::numeric_limits<std::int32_t>::max();

[[noreturn]] inline void fail(std::uint64_t line, const std::string& why) {
  throw TraceFormatError(fmt::format("trace line {}: {}", line, why));
}

inline std::string tla_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

inline std::int64_t number(const Json& object, const char* field, std::uint64_t line) {
  const auto it = object.find(field);
  if (it == object.end() || !it->is_number_integer()) fail(line, fmt::format("no integer field '{}'", field));
  const auto value = it->get<std::int64_t>();
  if (value < 0 || value > tlc_int_max) {
    fail(line, fmt::format("'{}' = {} is outside 0..{}, the integers TLC has", field, value, tlc_int_max));
  }
  return value;
}

inline std::string text(const Json& object, const char* field, std::uint64_t line) {
  const auto it = object.find(field);
  if (it == object.end() || !it->is_string()) fail(line, fmt::format("no string field '{}'", field));
  return it->get<std::string>();
}

inline const Json& member(const Json& object, const char* field, std::uint64_t line) {
  const auto it = object.find(field);
  if (it == object.end()) fail(line, fmt::format("no field '{}'", field));
  return *it;
}

inline std::string set_text(const std::set<std::string>& items) {
  std::string out = "{";
  for (const auto& item : items) out += (out.size() > 1 ? ", " : "") + tla_string(item);
  return out + "}";
}

inline std::string set_text(const std::set<std::int64_t>& items) {
  std::string out = "{";
  for (const auto item : items) out += (out.size() > 1 ? ", " : "") + std::to_string(item);
  return out + "}";
}

// The trace spec `spec_text` (module `spec_module`) as the module
// `module_name`, with each of its lines `CONSTANT <name>` named in
// `definitions` replaced by the definition `<name> == <text>` (the first
// preceded by the comment): TLC
// evaluates a constant that the config overrides with a definition again at
// every use, which makes checking a long trace quadratic; a definition of the
// module is evaluated once.
inline std::string module_with_definitions(std::string_view spec_text, std::string_view spec_module,
                                           const std::string& module_name, const std::string& comment,
                                           const std::vector<std::pair<std::string, std::string>>& definitions) {
  const std::string header = fmt::format("MODULE {}", spec_module);
  std::string module(spec_text);
  const auto header_at = module.find(header);
  if (header_at == std::string::npos) {
    throw TraceFormatError(fmt::format("the trace spec text has no '{}' header", header));
  }
  module.replace(header_at, header.size(), "MODULE " + module_name);
  bool first = true;
  for (const auto& [name, text] : definitions) {
    const auto line = fmt::format("\nCONSTANT {}", name);
    auto at = module.find(line + " ");
    if (at == std::string::npos) at = module.find(line + "\n");
    if (at == std::string::npos) {
      throw TraceFormatError(fmt::format("the trace spec text has no 'CONSTANT {}' line", name));
    }
    const auto end = module.find('\n', at + 1);
    std::string definition = first ? fmt::format("\n\\* {} (written by `lockstep trace-to-tla`).", comment) : "";
    definition += fmt::format("\n{} == {}", name, text);
    module.replace(at, (end == std::string::npos ? module.size() : end) - at, definition);
    first = false;
  }
  return module;
}

// The same for the one definition `Trace == <<events>>`.
inline std::string module_with_trace(std::string_view spec_text, std::string_view spec_module,
                                     const std::string& module_name, const std::string& comment,
                                     const std::string& events) {
  return module_with_definitions(spec_text, spec_module, module_name, comment, {{"Trace", "<<\n" + events + "\n>>"}});
}

}  // namespace lockstep::sim::tla_text
