#!/usr/bin/env bash
# A server that accepts connections and never answers (mute_server.py),
# fuzzed for 5 s: the run must end, within a bound far above what it takes
# (the drain waits for the longest wait asked plus the tolerance), and it
# must be a violation (exit 1), never a pass nor `unknown`.
# usage: mute.sh LOCKSTEP WORK_DIR
set -uo pipefail
lockstep=$1 work_dir=$2
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work_dir" && mkdir -p "$work_dir"
started=$SECONDS
timeout 300 "$lockstep" fuzz --exec "python3 $here/mute_server.py --port {port}" --duration-s 5 \
  --history "$work_dir/history.ndjson" --report "$work_dir/report.html" >"$work_dir/fuzz.out" 2>&1
status=$?
grep -E '^(fuzz|run|verdict|violations)' "$work_dir/fuzz.out"
grep -E '^violation \[key\]' "$work_dir/fuzz.out" | head -2 | cut -c1-300
echo "ended after $((SECONDS - started)) s"
[ $status -ne 124 ] || fail "the fuzzing of a mute server did not end within 300 s"
[ $status -eq 1 ] || fail "a mute server gave exit $status, not 1 (a violation)"
echo ok
