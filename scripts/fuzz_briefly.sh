#!/usr/bin/env bash
# Builds the `fuzz` preset (clang, ASan + UBSan, libFuzzer) and runs each
# libFuzzer target for SECONDS (default 20) from its checked-in corpus.
# New inputs go to a scratch folder, not into the repository; a crash or a
# failed check leaves its reproducer there and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
scratch=$(mktemp -d)
for target in codec vector engine_model; do
  mkdir -p "$scratch/$target"
  echo "fuzz: ${target}_fuzzer for ${seconds} s"
  (cd "$scratch/$target" && "$OLDPWD/build/fuzz/${target}_fuzzer" -max_total_time="$seconds" -print_final_stats=1 \
     "$scratch/$target" "$OLDPWD/tests/fuzz/corpus/$target" 2>&1 | tail -4) || { echo "fuzz: ${target}_fuzzer failed; see $scratch/$target"; exit 1; }
done
rm -rf "$scratch"
