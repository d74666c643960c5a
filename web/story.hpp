// A conformance vector told as a guided story: its steps performed one at a
// time on a playground session, its comments shown as narration, and its
// `expect` lines judged as each instant ends, with the same judge the
// runners use (model/judge.hpp).
//
// The steps follow the in-process runner's order: for each instant the
// vector names, the clock moves to it (anything sent at an instant the
// vector does not name fails), then its `at` and `close` lines run in file
// order, then what was sent at that instant is judged against its `expect`
// lines. What is judged is the engine (with the bug the page chose) for a
// simple-mode vector, the one-node cluster for a `mode=cluster` one.
//
// Narration: the comment lines just above a line, and the comment at its
// end, belong to that line; the comments above the first step (and beside
// `config`) are the story's introduction.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/judge.hpp"
#include "model/vector.hpp"
#include "web/session.hpp"

namespace lockstep::web {

struct StoryStep {
  enum class Kind { clock, at, close, check };
  Kind kind = Kind::clock;
  TimeMs at;
  int line = 0;             // at, close: its line in the file
  std::string connection;   // at, close
  std::string text;         // at: the request as written (with its $names)
  std::string narration;
  std::vector<int> expect_lines;  // check: the expect lines of that instant
};

// What one step did.
struct StoryReport {
  std::size_t step = 0;  // its index in steps()
  std::string action;    // what happened, in words
  bool ok = true;
  int line = 0;          // where a failure is reported
  std::string message;   // why it failed
};

class Story {
 public:
  static std::variant<Story, VectorError> parse(std::string_view text);

  const Vector& vector() const { return vector_; }
  const std::string& introduction() const { return introduction_; }
  const std::vector<StoryStep>& steps() const { return steps_; }
  // The service whose responses are judged.
  Source judged() const { return vector_.mode == VectorMode::cluster ? Source::cluster : Source::engine; }
  // Steps performed so far.
  std::size_t position() const { return position_; }
  bool finished() const { return position_ == steps_.size() || failure_.has_value(); }
  const std::optional<StoryReport>& failure() const { return failure_; }

  // Performs the next step on `session`, which must have been made with
  // vector().limits and have seen only this story's steps.
  StoryReport next(Session& session);

 private:
  explicit Story(Vector vector) : vector_(std::move(vector)), judge_(vector_) {}
  StoryReport perform(const StoryStep& step, Session& session);

  Vector vector_;
  VectorJudge judge_;
  std::string introduction_;
  std::vector<StoryStep> steps_;
  std::size_t position_ = 0;
  std::optional<TimeMs> judged_until_;  // the last instant judged
  std::optional<StoryReport> failure_;
};

}  // namespace lockstep::web
