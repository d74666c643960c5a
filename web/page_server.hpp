// `lockstep playground`, once its options are parsed: the built page found
// (the web preset's build folder beside this binary's, unless one is named)
// and checked to hold its files, then served on loopback by
// web/static_server.hpp.
#pragma once

#include <string>

namespace lockstep::web {

struct PageServerOptions {
  int port = 8787;     // 0: any free port
  std::string folder;  // empty: the web preset's build folder
};

// 2 (one line on stderr) when the folder holds no built page; otherwise as
// run_static_server.
int serve_page(const PageServerOptions& options);

}  // namespace lockstep::web
