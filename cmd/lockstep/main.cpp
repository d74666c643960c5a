// lockstep: the reference lock service, its oracle and its test tools.
//
// Exit codes, the same for every command (docs/protocol.md, "Exit codes"):
// 0 success or conforms, 1 a violation or a failed check, 2 bad usage, bad
// input or an environment that does not allow the run (a command line the
// parser refuses included). Every refusal is one line on stderr that names
// the option or the file at fault.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <unistd.h>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cli/version.hpp"

namespace {

// A history of a minute holds a few hundred MB of small objects and
// vectors. glibc maps each block above its threshold (128 KiB, rising to
// 32 MiB) on its own and returns it when freed, so a large vector freed and
// another allocated had the kernel fault in and clear fresh pages each
// time; with huge pages (an earlier choice) the kernel also had to find
// free 2 MiB frames, and when memory was fragmented its compaction made
// half the runs a third slower (check-history on a minute of fuzzing:
// 0.94-0.97 s or 1.26-1.29 s, system time 0.02 or 0.33 s). glibc reads its
// tunables only when a process starts, so the history commands start
// themselves once more with blocks up to 256 MiB taken from the heap,
// whose pages are reused once faulted in: 0.98-1.09 s, system time under
// 0.07 s, 7 MB less resident (docs/performance.md).
void restart_with_heap_blocks(int argc, char** argv) {
  if (argc < 2 || std::getenv("GLIBC_TUNABLES") != nullptr) return;
  const std::string_view command = argv[1];
  if (command != "check-history" && command != "fuzz" && command != "miss-rate") return;
  if (::setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=268435456", 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("GLIBC_TUNABLES");  // could not restart: go on as we are
}

bool every(const CLI::App*) { return true; }

// The names of a command's subcommands, for "unknown command" messages.
std::string subcommand_names(const CLI::App& app) {
  std::string names;
  for (const auto* sub : app.get_subcommands(every)) names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// The command line's words that name commands, as far as they are known,
// and the first word where a command was expected but none is known.
struct CommandPath {
  const CLI::App* deepest;
  std::string words = "lockstep";
  std::string unknown;
};

CommandPath command_path(const CLI::App& app, int argc, char** argv) {
  CommandPath path{&app, "lockstep", ""};
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.starts_with('-')) break;
    const CLI::App* next = nullptr;
    for (const auto* sub : path.deepest->get_subcommands(every)) {
      if (sub->check_name(std::string(word))) next = sub;
    }
    if (next == nullptr) {
      if (path.deepest->get_require_subcommand_min() > 0) path.unknown = word;
      break;
    }
    path.deepest = next;
    path.words += " " + next->get_name();
  }
  return path;
}

// An option given twice is a mistake, whatever the second one says: the
// parser refuses it rather than keep one of the two. Options with a value
// are refused so by default; flags (`--swarm`) are made to be too, in every
// command. The help flags stay as they are (they end the parse at once).
void refuse_repeated_flags(CLI::App& app) {
  for (auto* option : app.get_options()) {
    if (option == app.get_help_ptr() || option == app.get_help_all_ptr()) continue;
    if (option->get_expected_max() == 0) option->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  }
  for (auto* sub : app.get_subcommands(every)) refuse_repeated_flags(*sub);
}

// CLI11 says "--seed: At Most 1 required but received 2" of an option given
// twice; the refusal says it in the words of the rest of the tool.
std::string repeated_option(const std::string& what) {
  constexpr std::string_view marker = ": At Most 1 required but received ";
  const auto at = what.find(marker);
  if (at == std::string::npos) return {};
  const auto times = what.substr(at + marker.size());
  return fmt::format("{} is given {} times; give it once", what.substr(0, at), times);
}

// One line for a command line the parser refused: the command, what is
// wrong (CLI11 names the option), and where to read more.
int refuse(const CLI::App& app, const CLI::ParseError& error, int argc, char** argv) {
  const auto path = command_path(app, argc, argv);
  std::string what = error.what();
  if (auto repeated = repeated_option(what); !repeated.empty()) {
    what = std::move(repeated);
  } else if (!path.unknown.empty()) {
    what = fmt::format("unknown command '{}'; the commands are {}", path.unknown, subcommand_names(*path.deepest));
  } else if (path.deepest->get_require_subcommand_min() > 0 && error.get_name() == "RequiredError" &&
             what.find("subcommand") != std::string::npos) {
    what = fmt::format("a command is required: {}", subcommand_names(*path.deepest));
  }
  for (auto& c : what) {
    if (c == '\n') c = ' ';
  }
  fmt::print(stderr, "{}: {} (see {} --help)\n", path.words, what, path.words);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_heap_blocks(argc, argv);
  CLI::App app{
      "lockstep: a reference implementation of a lease-based lock service, and the tools to\n"
      "check any implementation against it. The protocol, the vector and history formats and\n"
      "the exit codes are in docs/protocol.md. Exit codes: 0 success or conforms, 1 a violation\n"
      "or a failed check, 2 bad usage, bad input or environment."};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("lockstep {}", lockstep::build_version()),
                       "print the version and the commit it was built from, and exit");
  std::function<int()> run;
  lockstep::cli::add_conform_command(app, run);
  lockstep::cli::add_bench_command(app, run);
  lockstep::cli::add_check_command(app, run);
  lockstep::cli::add_serve_command(app, run);
  lockstep::cli::add_sim_command(app, run);
  lockstep::cli::add_trace_commands(app, run);
  lockstep::cli::add_fuzz_command(app, run);
  lockstep::cli::add_check_history_command(app, run);
  lockstep::cli::add_miss_rate_command(app, run);
  lockstep::cli::add_merge_command(app, run);
  lockstep::cli::add_playground_command(app, run);
  lockstep::cli::add_cluster_command(app, run);
  refuse_repeated_flags(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    return refuse(app, error, argc, argv);
  }
  return run();
}
