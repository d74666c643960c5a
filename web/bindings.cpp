// The page's only door into WebAssembly: the Playground class
// (web/playground.hpp) exported to JavaScript as it is. Every method takes
// and returns strings (JSON for the state), so that the binding stays this
// file.
#include <emscripten/bind.h>

#include "web/playground.hpp"

EMSCRIPTEN_BINDINGS(lockstep_playground) {
  using lockstep::web::Playground;
  emscripten::class_<Playground>("Playground")
      .constructor<>()
      .function("reset", &Playground::reset)
      .function("openConnection", &Playground::open_connection)
      .function("send", &Playground::send)
      .function("close", &Playground::close)
      .function("step", &Playground::step)
      .function("toNextDue", &Playground::to_next_due)
      .function("setBug", &Playground::set_bug)
      .function("loadStory", &Playground::load_story)
      .function("storyNext", &Playground::story_next)
      .function("exportVector", &Playground::export_vector)
      .function("snapshot", &Playground::snapshot)
      .class_function("bugs", &Playground::bugs);
}
