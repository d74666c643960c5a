// The JUnit XML of a `lockstep conform` run, for CI systems: one test case
// per vector file, its verdict line as a failure's message.
#pragma once

#include <string>
#include <vector>

#include "model/runner.hpp"

namespace lockstep {

// One vector file's verdict and how long it took.
struct VectorFileResult {
  std::string file;
  VectorVerdict verdict;
  double seconds = 0;
};

std::string conform_junit(const std::vector<VectorFileResult>& results, const std::string& against,
                          const std::string& bug);

}  // namespace lockstep
