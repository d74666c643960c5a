// What the page talks to: a session (web/session.hpp), the guided story
// being told on it (web/story.hpp), and the page's settings (the config and
// the bug). Every call returns the whole state as JSON, which the page draws
// from scratch; a refused input leaves the state as it was and names why in
// "error". The page's script holds no state of the lock service at all.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "web/session.hpp"
#include "web/story.hpp"

namespace lockstep::web {

class Playground {
 public:
  Playground();

  // A fresh session under `config`: the words of a vector's `config` line
  // (`sweep_ms=1000 max_keys=2 mode=cluster`), empty for the defaults.
  std::string reset(const std::string& config);
  std::string open_connection();
  std::string send(const std::string& connection, const std::string& line);
  std::string close(const std::string& connection);
  // Moves the clock by `step_ms` (1 .. 86,400,000).
  std::string step(double step_ms);
  std::string to_next_due();
  // A bug of the catalogue by name, or "none".
  std::string set_bug(const std::string& name);
  // A fresh session for the vector `text`, told as a story (`name` is shown).
  std::string load_story(const std::string& name, const std::string& text);
  std::string story_next();
  // The session as a .vec file: of simple mode, or of cluster mode.
  std::string export_vector(const std::string& mode) const;
  std::string snapshot() const;
  // The bug catalogue: [{"name", "story"}].
  static std::string bugs();

 private:
  std::string answer(std::optional<std::string> error) const;

  Session session_;
  std::string config_;
  VectorMode mode_ = VectorMode::simple;
  std::optional<Story> story_;
  std::string story_name_;
  std::string story_text_;
  std::vector<StoryReport> reports_;
};

}  // namespace lockstep::web
