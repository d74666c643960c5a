#!/usr/bin/env bash
# The build another project's CI makes, only the tools and the client
# library, is one option away: the `tool` preset (LOCKSTEP_TESTS=OFF)
# configures without the test suite's dependencies (GTest and RapidCheck
# made unfindable here), its build holds the binaries, the client library,
# the install step and the packages, and no test, fuzz target or page, and
# its client library builds (the binaries are the default build's sources,
# which the suite has built already). In a folder of the test's own, not the
# preset's build/tool.
# usage: tool_configure.sh CMAKE SOURCE_DIR WORK_DIR
set -uo pipefail
cmake=$1 source_dir=$2 work=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
cd "$source_dir" || exit 1
"$cmake" --preset tool -B "$work/build" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_rapidcheck=ON \
  >"$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; fail "cmake --preset tool failed"; }
grep -q '^LOCKSTEP_TESTS:BOOL=OFF$' "$work/build/CMakeCache.txt" || fail "the tool preset builds the tests"
targets=$(ninja -C "$work/build" -t targets all | sed -n 's/^\([^ :]*\): .*/\1/p')
for wanted in lockstep lockstep-etcd-lock lockstep-redis-lock lockstep_client install package; do
  echo "$targets" | grep -qx "$wanted" || fail "the tool-only build has no target $wanted"
done
for unwanted in sim_tests live_tests etcd_lock_tests codec_fuzzer lockstep_page test; do
  echo "$targets" | grep -qx "$unwanted" && fail "the tool-only build has the target $unwanted"
done
"$cmake" --build "$work/build" --target lockstep_client >"$work/build.log" 2>&1 ||
  { tail -20 "$work/build.log"; fail "the tool build's client library did not build"; }
echo "tool-only build: $(echo "$targets" | grep -c '\.o$') objects, no test target; its client library builds"
echo ok
