#!/usr/bin/env bash
# Installs what lockstep needs to build and test, from Debian's packages.
# Idempotent: prints nothing and changes nothing when everything is there.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev
  googletest libgtest-dev librapidcheck-dev
  libhiredis-dev redis-server
  chromium  # headless, renders the HTML report in tests/report
  python3   # tests/history/other_server.py, a second server the fuzzer is tested against; tests/cli
  procps    # ps and pkill: tests/cli checks that no process is left in a test's session
  clang libclang-rt-14-dev  # the fuzz preset's libFuzzer targets (scripts/fuzz_briefly.sh)
  emscripten  # the web preset: the playground page in WebAssembly (web/)
  # cluster mode on etcd: gRPC C++ and protobuf, whose compilers generate the
  # client from drivers/etcd/proto/ at build time, and etcd itself for the tests
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler etcd-server
)

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
