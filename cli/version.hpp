// The version every binary of the project prints for `--version`: the
// project's version and the commit it was built from, e.g. `0.1.0 (commit
// 1a48e2c0f3ab)`, or `-dirty` after it when tracked files differed from
// that commit, or `unknown` outside a git checkout. The definition is
// generated at build time (packaging/write_version.cmake).
#pragma once

#include <string_view>

namespace lockstep {

std::string_view build_version();

}  // namespace lockstep
