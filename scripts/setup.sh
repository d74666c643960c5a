#!/usr/bin/env bash
# Installs what lockstep needs to build and test, from Debian's packages.
# Idempotent: prints nothing and changes nothing when everything is there.
# `--tool`: only what the `tool` preset needs to build the tools and the
# client library (another project's CI), without the test suite's.
set -euo pipefail

# What the build needs (the `tool` preset).
tool_packages=(
  g++ cmake ninja-build pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev libhiredis-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
)
case "${1:-}" in
  --tool) tool_only=1 ;;
  "") tool_only=0 ;;
  *) echo "usage: setup.sh [--tool]" >&2; exit 2 ;;
esac

packages=(
  "${tool_packages[@]}"
  googletest libgtest-dev librapidcheck-dev
  redis-server  # lockstep-redis-lock's tests and bench server
  help2man dpkg-dev  # the man pages of `cmake --install` and the .deb's dependencies (tests/install/)
  chromium  # headless, renders the HTML report in tests/report
  python3   # tests/history/other_server.py, a second server the fuzzer is tested against; tests/cli
  procps    # ps and pkill: tests/cli checks that no process is left in a test's session
  clang libclang-rt-14-dev  # the fuzz preset's libFuzzer targets (scripts/fuzz_briefly.sh)
  emscripten  # the web preset: the playground page in WebAssembly (web/)
  etcd-server  # cluster mode's tests and lockstep-etcd-lock's
  faketime libfaketime  # wrong node clocks for the cluster fuzzer (--skew-clocks, clock-jump)
)
[ "$tool_only" -eq 0 ] || packages=("${tool_packages[@]}")

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
