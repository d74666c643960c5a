#include "web/playground.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace lockstep::web {

namespace {

using nlohmann::json;

constexpr double step_ms_max = 86'400'000;

const char* entry_kind(Entry::Kind kind) {
  switch (kind) {
    case Entry::Kind::request:
      return "request";
    case Entry::Kind::close:
      return "close";
    case Entry::Kind::response:
      return "response";
  }
  return "?";
}

const char* step_kind(StoryStep::Kind kind) {
  switch (kind) {
    case StoryStep::Kind::clock:
      return "clock";
    case StoryStep::Kind::at:
      return "at";
    case StoryStep::Kind::close:
      return "close";
    case StoryStep::Kind::check:
      return "check";
  }
  return "?";
}

// Limits and mode from the words of a `config` line, by the vector parser
// itself so that the page accepts exactly what a vector does.
std::variant<Vector, std::string> parse_config(const std::string& config) {
  if (config.find('\n') != std::string::npos || config.find('#') != std::string::npos) {
    return std::string("the config is one line of NAME=VALUE words");
  }
  auto parsed = parse_vector((config.empty() ? std::string() : "config " + config + "\n") + "end 0\n");
  if (auto* error = std::get_if<VectorError>(&parsed)) return "config: " + error->message;
  return std::get<Vector>(std::move(parsed));
}

json keys_of(const Session& session) {
  json keys = json::array();
  for (const auto& [key, state] : session.model().keys()) {
    json queue = json::array();
    for (const auto& waiter : state.queue) {
      queue.push_back({{"owner", waiter.owner},
                       {"connection", session.connection_name(waiter.connection)},
                       {"lease_ms", waiter.lease_ms.value},
                       {"deadline", waiter.deadline.value}});
    }
    keys.push_back({{"key", key},
                    {"holder", state.holder},
                    {"token", state.token.value},
                    {"granted_at", state.granted_at.value},
                    {"expiry", state.expiry.value},
                    {"expired", session.now() >= state.expiry},
                    {"queue", std::move(queue)}});
  }
  return keys;
}

json report_json(const StoryReport& report) {
  return {{"step", report.step}, {"action", report.action}, {"ok", report.ok}, {"line", report.line},
          {"message", report.message}};
}

}  // namespace

Playground::Playground() : session_(Limits{}) {}

std::string Playground::reset(const std::string& config) {
  auto parsed = parse_config(config);
  if (auto* error = std::get_if<std::string>(&parsed)) return answer(*error);
  const auto& vector = std::get<Vector>(parsed);
  session_ = Session(vector.limits, session_.bug());
  config_ = config;
  mode_ = vector.mode;
  story_.reset();
  story_name_.clear();
  story_text_.clear();
  reports_.clear();
  return answer(std::nullopt);
}

std::string Playground::open_connection() { return answer(session_.open(session_.fresh_connection_name())); }

std::string Playground::send(const std::string& connection, const std::string& line) {
  return answer(session_.send(connection, line));
}

std::string Playground::close(const std::string& connection) { return answer(session_.close(connection)); }

std::string Playground::step(double step_ms) {
  if (!std::isfinite(step_ms) || step_ms != std::floor(step_ms) || step_ms < 1 || step_ms > step_ms_max) {
    return answer(fmt::format("a step is a whole number of ms from 1 to {:.0f}", step_ms_max));
  }
  return answer(session_.advance_to(session_.now() + DurationMs{static_cast<std::int64_t>(step_ms)}));
}

std::string Playground::to_next_due() {
  const auto due = session_.next_due();
  if (!due) return answer(std::string("nothing is due: no key is held and nobody waits"));
  return answer(session_.advance_to(*due));
}

std::string Playground::set_bug(const std::string& name) {
  const auto bug = bug_from_name(name);
  if (!bug) return answer(fmt::format("no bug is called '{}'", name));
  session_.set_bug(*bug);
  return answer(std::nullopt);
}

std::string Playground::load_story(const std::string& name, const std::string& text) {
  auto parsed = Story::parse(text);
  if (auto* error = std::get_if<VectorError>(&parsed)) {
    return answer(fmt::format("{}:{}: {}", name, error->line, error->message));
  }
  auto& story = std::get<Story>(parsed);
  session_ = Session(story.vector().limits, session_.bug());
  mode_ = story.vector().mode;
  config_.clear();
  story_ = std::move(story);
  story_name_ = name;
  story_text_ = text;
  reports_.clear();
  return answer(std::nullopt);
}

std::string Playground::story_next() {
  if (!story_) return answer(std::string("no story is open"));
  if (story_->finished()) return answer(std::nullopt);
  reports_.push_back(story_->next(session_));
  return answer(std::nullopt);
}

std::string Playground::export_vector(const std::string& mode) const {
  return session_.export_vector(mode == "cluster" ? VectorMode::cluster : VectorMode::simple);
}

std::string Playground::bugs() {
  json list = json::array();
  for (const auto& entry : bug_catalogue()) list.push_back({{"name", entry.name}, {"story", entry.story}});
  return list.dump();
}

std::string Playground::snapshot() const { return answer(std::nullopt); }

std::string Playground::answer(std::optional<std::string> error) const {
  json state;
  state["error"] = error ? json(*error) : json(nullptr);
  state["now"] = session_.now().value;
  const auto due = session_.next_due();
  state["next_due"] = due ? json(due->value) : json(nullptr);
  state["next_sweep"] = session_.next_sweep().value;
  state["sweep_ms"] = session_.limits().sweep_ms.value;
  state["config"] = config_;
  state["mode"] = mode_ == VectorMode::cluster ? "cluster" : "simple";
  state["bug"] = std::string(bug_name(session_.bug()));
  state["bug_story"] = "";
  for (const auto& entry : bug_catalogue()) {
    if (entry.bug == session_.bug()) state["bug_story"] = std::string(entry.story);
  }

  json connections = json::array();
  for (const auto& connection : session_.connections()) {
    connections.push_back({{"name", connection.name}, {"open", connection.open}});
  }
  state["connections"] = std::move(connections);

  json entries = json::array();
  for (const auto& entry : session_.entries()) {
    json item{{"kind", entry_kind(entry.kind)}, {"at", entry.at.value}, {"connection", entry.connection},
              {"line", entry.line}};
    if (entry.kind == Entry::Kind::response) item["source"] = source_name(entry.source);
    if (entry.closed_by_server) item["by_server"] = true;
    entries.push_back(std::move(item));
  }
  state["entries"] = std::move(entries);

  const auto divergence = session_.first_divergence();
  state["divergence"] = divergence ? json{{"at", divergence->at.value},
                                          {"engine_only", divergence->engine_only},
                                          {"model_only", divergence->model_only}}
                                   : json(nullptr);
  json failures = json::object();
  for (const auto source : sources) {
    if (const auto& failure = session_.failure(source)) failures[source_name(source)] = *failure;
  }
  state["failures"] = std::move(failures);
  state["keys"] = keys_of(session_);
  state["timeline"] = session_.timeline_svg();

  if (story_) {
    json steps = json::array();
    for (const auto& step : story_->steps()) {
      steps.push_back({{"kind", step_kind(step.kind)}, {"at", step.at.value}, {"line", step.line},
                       {"connection", step.connection}, {"text", step.text}, {"narration", step.narration},
                       {"expect_lines", step.expect_lines}});
    }
    json reports = json::array();
    for (const auto& report : reports_) reports.push_back(report_json(report));
    state["story"] = {{"name", story_name_},
                      {"text", story_text_},
                      {"introduction", story_->introduction()},
                      {"judged", source_name(story_->judged())},
                      {"steps", std::move(steps)},
                      {"position", story_->position()},
                      {"finished", story_->finished()},
                      {"failed", story_->failure().has_value()},
                      {"reports", std::move(reports)}};
  } else {
    state["story"] = nullptr;
  }
  return state.dump();
}

}  // namespace lockstep::web
