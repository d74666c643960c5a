// The playground's session and stories (web/session.*, web/story.*), natively,
// without a browser. What the page shows is only as right as these are:
//
// - an exported session is a vector that the in-process runner passes on the
//   engine and on the model (simple mode) or the one-node cluster and the
//   cluster model (cluster mode), for a session that touches every rule (a
//   hand-off, a takeover, a release of an expired unswept key, a timeout, a
//   sweep hand-off, a close with a waiter, malformed and over-long lines);
//   and the runner fails it on the engine with the LIFO bug, so the expect
//   lines carry real answers;
// - with the LIFO bug, the first divergence is at the release, the engine's
//   grant to the newest waiter against the model's to the oldest; with no
//   bug there is none; choosing a bug later replays to the same entries as
//   choosing it first;
// - every vector of tests/vectors/ told as a story gets the same verdict, at
//   the same line, as the in-process runner, with no bug and with each
//   catalogued bug (the story and the runner must never disagree);
// - the four guided examples pass, except the LIFO one with its bug, which
//   fails at the expect line that gives the printer to bob;
// - inputs past a limit, or that a vector could not carry, are refused and
//   change nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "model/runner.hpp"
#include "web/playground.hpp"
#include "web/session.hpp"
#include "web/story.hpp"

namespace lockstep::web {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::filesystem::path> vec_files(const std::string& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() == ".vec") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Vector parsed(const std::string& text) {
  auto result = parse_vector(text);
  if (auto* error = std::get_if<VectorError>(&result)) {
    ADD_FAILURE() << "line " << error->line << ": " << error->message << "\n" << text;
    return {};
  }
  return std::get<Vector>(result);
}

// Every rule of simple mode, once, on the page's inputs.
Session busy_session(InjectedBug bug = InjectedBug::none) {
  Limits limits;
  limits.sweep_ms = DurationMs{1000};
  Session session(limits, bug);
  EXPECT_FALSE(session.send("c1", "A k alice 500 0"));
  EXPECT_FALSE(session.advance_to(TimeMs{10}));
  EXPECT_FALSE(session.send("c2", "A k bob 400 5000"));
  EXPECT_FALSE(session.send("c3", "A k carol 400 5000"));
  EXPECT_FALSE(session.advance_to(TimeMs{100}));
  EXPECT_FALSE(session.send("c1", "R k 1"));  // hand-off to bob, token 2
  EXPECT_FALSE(session.send("c1", "R k 1"));  // N: no longer alice's
  EXPECT_FALSE(session.send("c4", "A  k dave 1 1"));  // E: two spaces
  EXPECT_FALSE(session.advance_to(TimeMs{600}));       // bob expired at 500, not swept
  EXPECT_FALSE(session.send("c4", "A k dave 300 0"));  // takeover, token 3
  EXPECT_FALSE(session.send("c5", "A j erin 100 0"));  // token 4
  EXPECT_FALSE(session.send("c6", "A j frank 100 1000"));
  EXPECT_FALSE(session.advance_to(TimeMs{950}));       // carol's wait ends at 5010; erin expired at 700
  EXPECT_FALSE(session.send("c5", "R j 4"));           // R: expired, not swept; hands j to frank
  EXPECT_FALSE(session.send("c7", "A j grace 100 20"));
  // grace times out at 970; the sweep at 1000 hands k (dave expired at 900)
  // to carol, the one at 2000 deletes k and j.
  EXPECT_FALSE(session.advance_to(TimeMs{2500}));
  EXPECT_FALSE(session.send("c2", "A m bob 100 0"));
  EXPECT_FALSE(session.send("c8", "A m heidi 100 900"));
  EXPECT_FALSE(session.close("c8"));                   // heidi's wait goes with her connection
  EXPECT_FALSE(session.send("c9", std::string(1100, 'x')));  // E, then the server closes c9
  EXPECT_FALSE(session.advance_to(TimeMs{3100}));
  return session;
}

TEST(PlaygroundSession, ExportedSimpleSessionPassesTheRunnerOnEngineAndModel) {
  const auto session = busy_session();
  const auto text = session.export_vector(VectorMode::simple);
  const auto vector = parsed(text);
  for (const auto kind : {ServiceKind::engine, ServiceKind::model}) {
    const auto verdict = run_vector(vector, kind);
    EXPECT_EQ(verdict.status, VectorVerdict::Status::ok) << verdict.line << ": " << verdict.message << "\n" << text;
  }
  // The expect lines say something: the LIFO engine hands k to carol at 100.
  const auto broken = run_vector(vector, ServiceKind::engine, InjectedBug::lifo_handoff);
  EXPECT_EQ(broken.status, VectorVerdict::Status::fail);
  EXPECT_NE(broken.message.find("at 100:"), std::string::npos) << broken.message;
  // Every rule showed up in what the model sent.
  for (const auto* expected : {"expect 100 c2 A $t2 bob k", "expect 100 c1 N $t1 k", "expect 100 c4 E",
                               "expect 600 c4 A $t3 dave k", "expect 950 c5 R $t4 j", "expect 970 c7 T grace j",
                               "expect 2500 c9 E", "close 2500 c8", "config sweep_ms=1000"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
}

TEST(PlaygroundSession, ExportedClusterSessionPassesTheRunnerOnBothClusterServices) {
  const auto session = busy_session();
  const auto text = session.export_vector(VectorMode::cluster);
  const auto vector = parsed(text);
  ASSERT_EQ(vector.mode, VectorMode::cluster);
  for (const auto kind : {ServiceKind::engine, ServiceKind::model}) {
    const auto verdict = run_vector(vector, kind);
    EXPECT_EQ(verdict.status, VectorVerdict::Status::ok) << verdict.line << ": " << verdict.message << "\n" << text;
  }
  // Cluster rules differ from simple mode's on these inputs: bob's lease
  // ends at 500 by an Expire, so dave at 600 is granted a free key.
  EXPECT_NE(session.export_vector(VectorMode::simple), text);
}

TEST(PlaygroundSession, TheLifoBugDivergesAtTheReleaseAndNowhereWithoutIt) {
  EXPECT_FALSE(busy_session().first_divergence().has_value());
  const auto session = busy_session(InjectedBug::lifo_handoff);
  const auto divergence = session.first_divergence();
  ASSERT_TRUE(divergence.has_value());
  EXPECT_EQ(divergence->at, TimeMs{100});
  ASSERT_EQ(divergence->engine_only.size(), 1u);
  ASSERT_EQ(divergence->model_only.size(), 1u);
  const auto& engine = session.entries()[divergence->engine_only[0]];
  const auto& model = session.entries()[divergence->model_only[0]];
  EXPECT_EQ(engine.source, Source::engine);
  EXPECT_EQ(engine.connection, "c3");
  EXPECT_EQ(engine.line, "A 2 carol k");
  EXPECT_EQ(model.source, Source::model);
  EXPECT_EQ(model.connection, "c2");
  EXPECT_EQ(model.line, "A 2 bob k");
}

TEST(PlaygroundSession, ChoosingABugLaterReplaysToTheSameEntries) {
  auto later = busy_session();
  later.set_bug(InjectedBug::lifo_handoff);
  const auto first = busy_session(InjectedBug::lifo_handoff);
  ASSERT_EQ(later.entries().size(), first.entries().size());
  for (std::size_t i = 0; i < first.entries().size(); ++i) {
    EXPECT_EQ(later.entries()[i].line, first.entries()[i].line) << i;
    EXPECT_EQ(later.entries()[i].at, first.entries()[i].at) << i;
    EXPECT_EQ(later.entries()[i].connection, first.entries()[i].connection) << i;
  }
  EXPECT_EQ(later.now(), first.now());
  EXPECT_EQ(later.export_vector(VectorMode::simple), first.export_vector(VectorMode::simple));
}

TEST(PlaygroundSession, RefusedInputsChangeNothing) {
  Session session(Limits{});
  ASSERT_FALSE(session.send("c1", "A k alice 100 0"));
  const auto entries = session.entries().size();
  const auto inputs = session.inputs().size();
  for (const auto* line : {"", "A k alice 100 0 ", " A k alice 100 0", "A k #x 100 0", "A k\nalice"}) {
    EXPECT_TRUE(session.send("c1", line).has_value()) << "'" << line << "'";
  }
  EXPECT_TRUE(session.send("c1", std::string(Session::request_bytes_max + 1, 'x')).has_value());
  EXPECT_TRUE(session.send("bad name", "A k alice 100 0").has_value());
  EXPECT_TRUE(session.close("c9").has_value());
  ASSERT_FALSE(session.advance_to(TimeMs{50}));
  EXPECT_TRUE(session.advance_to(TimeMs{49}).has_value());
  for (std::size_t n = 2; n <= Session::connections_max; ++n) {
    EXPECT_FALSE(session.open("c" + std::to_string(n)).has_value()) << n;
  }
  EXPECT_TRUE(session.open("one-too-many").has_value());
  EXPECT_EQ(session.entries().size(), entries);
  EXPECT_EQ(session.inputs().size(), inputs + 1);  // the clock move only
  // Closing one makes room; its name comes back as a new connection.
  ASSERT_FALSE(session.close("c2"));
  EXPECT_FALSE(session.open("one-more").has_value());
  EXPECT_TRUE(session.open("c2").has_value());
}

TEST(PlaygroundSession, TheTimelineDrawsTheMarksOfWhatHappened) {
  const auto svg = busy_session().timeline_svg();
  for (const auto* mark : {"mark grant", "mark handoff", "mark takeover", "mark sweep-handoff", "mark timeout",
                           "class=\"hold\"", "class=\"wait\"", "class=\"overdue\"", "sweep-instant"}) {
    EXPECT_NE(svg.find(mark), std::string::npos) << mark;
  }
}

// The story and the runner judge alike: same verdict, same line.
void expect_story_agrees(const std::filesystem::path& path, InjectedBug bug) {
  const auto text = read_file(path);
  auto story_or_error = Story::parse(text);
  const auto runner = run_vector_file(path.string(), ServiceKind::engine, bug);
  if (const auto* error = std::get_if<VectorError>(&story_or_error)) {
    EXPECT_EQ(runner.status, VectorVerdict::Status::fail) << path << ": " << error->message;
    return;
  }
  auto& story = std::get<Story>(story_or_error);
  Session session(story.vector().limits, story.vector().mode == VectorMode::cluster ? InjectedBug::none : bug);
  while (!story.finished()) story.next(session);
  const auto label = fmt::format("{} with bug {}", path.filename().string(), bug_name(bug));
  if (runner.status == VectorVerdict::Status::ok) {
    EXPECT_FALSE(story.failure().has_value()) << label << ": " << story.failure()->line << ": "
                                              << story.failure()->message;
  } else {
    ASSERT_TRUE(story.failure().has_value()) << label << ": the runner failed at " << runner.line << ": "
                                             << runner.message;
    EXPECT_EQ(story.failure()->line, runner.line) << label << ": " << story.failure()->message << " / "
                                                  << runner.message;
  }
}

TEST(PlaygroundStory, EveryVectorGetsTheRunnersVerdictWithAndWithoutEachBug) {
  const auto files = vec_files(LOCKSTEP_VECTOR_DIR);
  ASSERT_GT(files.size(), 50u);
  for (const auto& path : files) {
    expect_story_agrees(path, InjectedBug::none);
    if (path.filename().string().starts_with("cluster-")) continue;  // simple-mode bugs only
    for (const auto& entry : bug_catalogue()) expect_story_agrees(path, entry.bug);
  }
}

TEST(PlaygroundStory, TheGuidedExamplesPassAndTheLifoOneFailsWithItsBug) {
  const auto files = vec_files(LOCKSTEP_EXAMPLE_DIR);
  ASSERT_EQ(files.size(), 4u);
  for (const auto& path : files) expect_story_agrees(path, InjectedBug::none);

  const auto path = std::filesystem::path(LOCKSTEP_EXAMPLE_DIR) / "lifo-bug-breaks-fifo.vec";
  auto story = std::get<Story>(Story::parse(read_file(path)));
  Session session(story.vector().limits, InjectedBug::lifo_handoff);
  while (!story.finished()) story.next(session);
  ASSERT_TRUE(story.failure().has_value());
  // The expect line that gives the printer to bob at 3000 ms.
  const auto& steps = story.vector().steps;
  const auto bob = std::find_if(steps.begin(), steps.end(), [](const VectorStep& step) {
    return step.kind == VectorStep::Kind::expect && step.text == "A $b bob printer";
  });
  ASSERT_NE(bob, steps.end());
  EXPECT_EQ(story.failure()->line, bob->line) << story.failure()->message;
  EXPECT_EQ(bob->time, TimeMs{3000});
}

TEST(PlaygroundStory, NarrationComesFromTheCommentsAboveAndBesideALine) {
  const auto text =
      "# The introduction,\n"
      "# in two lines.\n"
      "config sweep_ms=1000  # beside config: still the introduction\n"
      "at 0 c1 A k alice 100 0  # beside the request\n"
      "# above the expect\n"
      "expect 0 c1 A $a alice k\n"
      "end 10\n"
      "# after the last line\n";
  const auto story = std::get<Story>(Story::parse(text));
  EXPECT_EQ(story.introduction(), "The introduction, in two lines. beside config: still the introduction");
  ASSERT_GE(story.steps().size(), 3u);
  EXPECT_EQ(story.steps()[0].kind, StoryStep::Kind::at);
  EXPECT_EQ(story.steps()[0].narration, "beside the request");
  EXPECT_EQ(story.steps()[1].kind, StoryStep::Kind::check);
  EXPECT_EQ(story.steps()[1].narration, "above the expect");
  EXPECT_EQ(story.steps().back().narration, "after the last line");
}

TEST(PlaygroundPage, RefusedCallsNameWhyAndKeepTheState) {
  Playground playground;
  const auto before = playground.snapshot();
  EXPECT_NE(playground.step(0).find("\"error\":\"a step is"), std::string::npos);
  EXPECT_NE(playground.step(1.5).find("\"error\":\"a step is"), std::string::npos);
  EXPECT_NE(playground.set_bug("no-such-bug").find("no bug is called"), std::string::npos);
  EXPECT_NE(playground.reset("sweep_ms=0").find("\"error\":\"config: "), std::string::npos);
  EXPECT_NE(playground.reset("sweep_ms=1 # x").find("\"error\":"), std::string::npos);
  EXPECT_NE(playground.load_story("bad.vec", "at x").find("\"error\":\"bad.vec:1:"), std::string::npos);
  EXPECT_EQ(playground.snapshot(), before);
}

}  // namespace
}  // namespace lockstep::web
