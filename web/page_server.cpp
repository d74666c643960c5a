#include "web/page_server.hpp"

#include <cstdint>
#include <filesystem>

#include <fmt/format.h>

#include "web/static_server.hpp"

namespace lockstep::web {

namespace {

// build/default/lockstep serves build/web/page: the presets' folders.
std::string default_folder() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "build/web/page";
  return (self.parent_path().parent_path() / "web" / "page").string();
}

}  // namespace

int serve_page(const PageServerOptions& options) {
  const auto folder = options.folder.empty() ? default_folder() : options.folder;
  for (const char* file : {"index.html", "lockstep.js", "app.js", "vectors.js"}) {
    if (!std::filesystem::is_regular_file(std::filesystem::path(folder) / file)) {
      fmt::print(stderr,
                 "lockstep playground: no built page in {} ({} is missing); build it with "
                 "`cmake --preset web && cmake --build --preset web`, or name its folder with --dir\n",
                 folder, file);
      return 2;
    }
  }
  return run_static_server({folder, static_cast<std::uint16_t>(options.port)});
}

}  // namespace lockstep::web
