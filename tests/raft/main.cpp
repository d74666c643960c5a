// The Raft tests' main: GoogleTest's, plus --rewrite to refresh the golden
// output of the scenario files.
#include <gtest/gtest.h>

#include <cstring>

namespace lockstep::sim {
extern bool rewrite_scenarios;
}

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rewrite") == 0) lockstep::sim::rewrite_scenarios = true;
  }
  return RUN_ALL_TESTS();
}
