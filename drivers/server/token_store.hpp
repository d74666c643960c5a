// Where the server keeps tokens unique and increasing across restarts
// (docs/architecture.md, "Tokens"). The first token of a run is above both the mark
// persisted by earlier runs and a floor derived from the wall clock
// (16 tokens per microsecond since the epoch, more than one thread can
// issue), so a restart is safe with a state file and, barring the wall clock
// stepping back, without one.
#pragma once

#include <optional>
#include <string>

#include "impl/units.hpp"

namespace lockstep {

class TokenStore {
 public:
  // Reads the mark from `path` (if not empty) and returns the first token of
  // this run, or nothing (see error()) when the file cannot be read.
  std::optional<Token> open(const std::string& path);
  // Writes `mark` durably (write, fsync, rename) when it is above what is
  // persisted; without a path there is nothing to do.
  bool persist(Token mark);
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  Token persisted_;
  std::string error_;
};

}  // namespace lockstep
