// Every scenario file under tests/raft/scenarios/ replayed against the Raft
// cluster, its output compared with the golden output checked in beside
// each command (etcd-io/raft's datadriven tests). Run the binary with
// --rewrite to replace the golden output with what the code produces now,
// then review the diff. A scenario must also pass every checker.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/raft/scenario.hpp"

namespace lockstep::sim {

bool rewrite_scenarios = false;

namespace {

std::vector<std::filesystem::path> scenario_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(LOCKSTEP_RAFT_SCENARIO_DIR)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class Scenario : public testing::TestWithParam<std::filesystem::path> {};

TEST_P(Scenario, MatchesGoldenOutput) {
  const auto text = read(GetParam());
  ASSERT_FALSE(text.empty());
  const auto result = run_scenario(text);
  if (rewrite_scenarios) {
    std::ofstream out(GetParam(), std::ios::binary);
    out << result.rewritten;
    return;
  }
  EXPECT_TRUE(result.matches) << GetParam().filename() << "\n" << result.first_mismatch;
  EXPECT_EQ(result.violations, 0u);
}

INSTANTIATE_TEST_SUITE_P(Files, Scenario, testing::ValuesIn(scenario_files()),
                         [](const testing::TestParamInfo<std::filesystem::path>& param) {
                           auto name = param.param.stem().string();
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace lockstep::sim
