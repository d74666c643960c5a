#include "web/story.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace lockstep::web {

namespace {

// Each line's narration: the comment lines just above it and its own comment.
// Returns the narration by line number, and the introduction.
std::map<int, std::string> narrations(std::string_view text, int first_step_line, std::string& introduction,
                                      std::string& epilogue) {
  std::map<int, std::string> by_line;
  std::string pending;
  int number = 0;
  const auto join = [](std::string& into, std::string_view more) {
    if (more.empty()) return;
    if (!into.empty()) into += ' ';
    into += more;
  };
  while (!text.empty()) {
    const auto newline = text.find('\n');
    const auto line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    ++number;
    const auto comment = comment_of(line);
    const auto code_end = line.find_first_not_of(" \t\r");
    const bool only_comment = code_end == std::string_view::npos || line[code_end] == '#';
    if (only_comment) {
      if (comment.empty() && code_end == std::string_view::npos && !pending.empty()) pending += "\n\n";
      join(pending, comment);
      continue;
    }
    // What is written above the first step (and beside config) introduces
    // the story; the first step keeps only its own comment.
    std::string said = std::move(pending);
    pending.clear();
    if (number <= first_step_line) {
      join(introduction, said);
      said.clear();
    }
    join(said, comment);
    if (number < first_step_line) {
      join(introduction, said);
    } else {
      by_line[number] = said;
    }
  }
  epilogue = std::move(pending);  // the comments after the last step
  return by_line;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

std::variant<Story, VectorError> Story::parse(std::string_view text) {
  auto parsed = parse_vector(text);
  if (auto* error = std::get_if<VectorError>(&parsed)) return *error;
  Story story(std::get<Vector>(std::move(parsed)));
  if (story.judge_.problem()) return *story.judge_.problem();

  std::string epilogue;
  const auto said = narrations(text, story.vector_.steps.front().line, story.introduction_, epilogue);
  const auto narration_of = [&](int line) {
    const auto found = said.find(line);
    return found == said.end() ? std::string() : found->second;
  };
  int last_line = 0;
  for (const auto& step : story.vector_.steps) last_line = std::max(last_line, step.line);

  std::optional<TimeMs> previous;
  for (const TimeMs instant : named_instants(story.vector_)) {
    if (instant.value > 0 && (!previous || *previous < instant)) {
      story.steps_.push_back({StoryStep::Kind::clock, instant, 0, {}, {}, {}, {}});
    }
    StoryStep check{StoryStep::Kind::check, instant, 0, {}, {}, {}, {}};
    for (const auto& step : story.vector_.steps) {
      if (step.time != instant) continue;
      switch (step.kind) {
        case VectorStep::Kind::at:
          story.steps_.push_back({StoryStep::Kind::at, instant, step.line, step.connection, step.text,
                                  narration_of(step.line), {}});
          break;
        case VectorStep::Kind::close:
          story.steps_.push_back({StoryStep::Kind::close, instant, step.line, step.connection, {},
                                  narration_of(step.line), {}});
          break;
        case VectorStep::Kind::expect:
          check.expect_lines.push_back(step.line);
          [[fallthrough]];
        case VectorStep::Kind::end:
          if (auto words = narration_of(step.line); !words.empty()) {
            check.narration += (check.narration.empty() ? "" : " ") + words;
          }
          if (step.line == last_line && !epilogue.empty()) {
            check.narration += (check.narration.empty() ? "" : " ") + epilogue;
          }
          break;
      }
    }
    story.steps_.push_back(std::move(check));
    previous = instant;
  }
  for (auto& step : story.steps_) step.narration = trimmed(std::move(step.narration));
  story.introduction_ = trimmed(std::move(story.introduction_));
  return story;
}

StoryReport Story::next(Session& session) {
  if (failure_) return *failure_;
  if (position_ == steps_.size()) return StoryReport{position_, "the story is over", true, 0, {}};
  const auto& step = steps_[position_];
  auto report = perform(step, session);
  report.step = position_;
  ++position_;
  if (!report.ok) failure_ = report;
  return report;
}

StoryReport Story::perform(const StoryStep& step, Session& session) {
  StoryReport report;
  const auto fail = [&](int line, std::string message) {
    report.ok = false;
    report.line = line;
    report.message = std::move(message);
    return report;
  };
  switch (step.kind) {
    case StoryStep::Kind::clock: {
      report.action = fmt::format("the clock moves to {} ms", step.at.value);
      if (auto problem = session.advance_to(step.at)) return fail(0, *problem);
      // Nothing may be sent between the last instant judged and this one.
      for (const TimeMs instant : session.instants_with_responses(judged())) {
        if ((judged_until_ && instant <= *judged_until_) || instant >= step.at) continue;
        const auto error = judge_.unexpected(instant, session.sent_at(judged(), instant),
                                             line_at_or_before(vector_, instant));
        return fail(error.line, error.message);
      }
      return report;
    }
    case StoryStep::Kind::at: {
      const VectorStep as_written{VectorStep::Kind::at, step.line, step.at, step.connection, step.text};
      auto line = judge_.request_line(as_written);
      if (auto* error = std::get_if<VectorError>(&line)) return fail(error->line, error->message);
      report.action = fmt::format("{} sends '{}' at {} ms", step.connection, std::get<std::string>(line), step.at.value);
      if (auto problem = session.send(step.connection, std::get<std::string>(line))) return fail(step.line, *problem);
      return report;
    }
    case StoryStep::Kind::close:
      report.action = fmt::format("{} closes at {} ms", step.connection, step.at.value);
      if (auto problem = session.close(step.connection)) return fail(step.line, *problem);
      return report;
    case StoryStep::Kind::check: {
      const auto count = step.expect_lines.size();
      report.action = count == 0 ? fmt::format("at {} ms nothing more may be sent", step.at.value)
                                 : fmt::format("checking the {} expect line{} of {} ms", count,
                                               count == 1 ? "" : "s", step.at.value);
      judged_until_ = step.at;
      // The instant ends with one more move to it, as in the runner: a
      // service that left work due at it must do it now.
      if (auto problem = session.advance_to(step.at)) return fail(0, *problem);
      if (auto error = judge_.judge_instant(step.at, session.sent_at(judged(), step.at))) {
        return fail(error->line, error->message);
      }
      return report;
    }
  }
  return report;
}

}  // namespace lockstep::web
