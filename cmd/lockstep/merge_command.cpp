// `lockstep merge`: the shards of one `sim` or `miss-rate` run, each
// written with --summary-json, added up (runs/shard_summary.hpp).
#include <memory>
#include <string>
#include <vector>

#include "cmd/lockstep/commands.hpp"
#include "cli/validators.hpp"
#include "runs/shard_summary.hpp"

namespace lockstep::cli {

// More files than this is not a run's shards but a mistake (a glob of the
// wrong folder); shards themselves go up to live::shard_count_max.
constexpr std::size_t merge_files_max = live::shard_count_max;

void add_merge_command(CLI::App& app, std::function<int()>& run) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto* command = app.add_subcommand(
      "merge",
      "Add up the shards of one `sim` or `miss-rate` run (each run with --shard I/N --summary-json FILE)\n"
      "and print what one run over the whole seed range would have printed: the failing seeds' reports\n"
      "in seed order and the summary table (the wall time is the shards' added up), or the miss-rate\n"
      "table. Exit as that run would: 0, or 1 on a violation; 2 when the files are not every shard of\n"
      "one run, each once.");
  command->add_option("files", *files, "the shards' summaries (--summary-json), in any order")
      ->required()
      ->expected(1, static_cast<int>(merge_files_max))
      ->check(readable_file());
  command->callback([files, &run] { run = [files] { return live::run_merge(*files); }; });
}

}  // namespace lockstep::cli
