// `lockstep playground`: the options of the playground page served on
// loopback, for a browser on this machine (web/page_server.hpp).
#include <memory>

#include "cmd/lockstep/commands.hpp"
#include "cli/validators.hpp"
#include "web/page_server.hpp"

namespace lockstep::cli {

void add_playground_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<web::PageServerOptions>();
  auto* command = app.add_subcommand(
      "playground",
      "Serve the playground page (the engine and the model in WebAssembly, built by the `web`\n"
      "preset) on 127.0.0.1 and print its address. SIGTERM or SIGINT stops it (exit 0).");
  command->add_option("--port", options->port, "TCP port on 127.0.0.1 (0: any free port, printed at start)")
      ->check(whole(0, 65535))
      ->capture_default_str();
  command->add_option("--dir", options->folder,
                      "the built page's folder (default: build/web/page beside this binary's build folder)");
  command->callback([options, &run] { run = [options] { return web::serve_page(*options); }; });
}

}  // namespace lockstep::cli
