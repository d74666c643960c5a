#!/usr/bin/env bash
# Builds the playground page with the `web` preset (Debian's emscripten)
# into build/web/page: the fixture of the browser tests. Configures once,
# then only builds (a no-op when nothing changed). Exits 77 (CTest: skipped,
# never passed) without emscripten.
#
# usage: build_page.sh SOURCE_DIR
set -uo pipefail
source_dir=$1
toolchain=/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake
if ! command -v em++ >/dev/null || [ ! -f "$toolchain" ]; then
  echo "SKIPPED: no emscripten (scripts/setup.sh installs Debian's emscripten)"
  exit 77
fi
cd "$source_dir" || exit 1
if [ ! -f build/web/CMakeCache.txt ]; then
  cmake --preset web || { echo "FAIL: cmake --preset web"; exit 1; }
fi
cmake --build --preset web || { echo "FAIL: cmake --build --preset web"; exit 1; }
for file in index.html style.css app.js lockstep.js vectors.js; do
  [ -s "build/web/page/$file" ] || { echo "FAIL: build/web/page/$file was not built"; exit 1; }
done
echo "ok: build/web/page"
