#include "cmd/lockstep/history_output_options.hpp"

#include "cli/validators.hpp"

namespace lockstep::cli {

void add_output_options(CLI::App& command, live::VerdictOutputs& outputs) {
  command.add_option("--report", outputs.report_path, "write a self-contained HTML report of the run")
      ->check(writable_file());
  command.add_option("--junit", outputs.junit_path, "write JUnit XML: one test case per key and check")
      ->check(writable_file());
  command.add_option("--budget-states", outputs.budget_states, "configurations the checker may step before saying unknown")
      ->check(whole(1))
      ->capture_default_str();
  command.add_option("--budget-memory-mb", outputs.budget_memory_mb,
                     "MiB the configurations of one instant may take before the checker says unknown")
      ->check(whole(16, std::uint64_t{1} << 20))
      ->capture_default_str();
  command.add_option("--vectors", outputs.vectors_dir,
                     "write each key's violation as a conformance vector (.vec) in this folder, for `conform --exec`")
      ->check(writable_folder());
  command.add_option("--explain", outputs.explain_key,
                     "print the explanation found for this key: the instant of each step of the server")
      ->check(protocol_name());
}

}  // namespace lockstep::cli
