// `lockstep playground`: serves the built playground page (web/, the `web`
// preset) on loopback, for a browser on this machine.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/validators.hpp"
#include "web/static_server.hpp"

namespace lockstep::cli {

namespace {

struct PlaygroundOptions {
  int port = 8787;
  std::string folder;  // empty: the web preset's build folder
};

// build/default/lockstep serves build/web/page: the presets' folders.
std::string default_folder() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "build/web/page";
  return (self.parent_path().parent_path() / "web" / "page").string();
}

int run_playground(const PlaygroundOptions& options) {
  const auto folder = options.folder.empty() ? default_folder() : options.folder;
  for (const char* file : {"index.html", "lockstep.js", "app.js", "vectors.js"}) {
    if (!std::filesystem::is_regular_file(std::filesystem::path(folder) / file)) {
      fmt::print(stderr,
                 "playground: no built page in {} ({} is missing); build it with "
                 "`cmake --preset web && cmake --build --preset web`, or name its folder with --dir\n",
                 folder, file);
      return 2;
    }
  }
  return web::run_static_server({folder, static_cast<std::uint16_t>(options.port)});
}

}  // namespace

void add_playground_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<PlaygroundOptions>();
  auto* command = app.add_subcommand(
      "playground",
      "Serve the playground page (the engine and the model in WebAssembly, built by the `web`\n"
      "preset) on 127.0.0.1 and print its address. SIGTERM or SIGINT stops it (exit 0).");
  command->add_option("--port", options->port, "TCP port on 127.0.0.1 (0: any free port, printed at start)")
      ->check(whole(0, 65535))
      ->capture_default_str();
  command->add_option("--dir", options->folder,
                      "the built page's folder (default: build/web/page beside this binary's build folder)");
  command->callback([options, &run] { run = [options] { return run_playground(*options); }; });
}

}  // namespace lockstep::cli
