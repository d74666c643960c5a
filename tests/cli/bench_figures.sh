#!/usr/bin/env bash
# A benchmark command of docs/cli.md, run briefly: it must exit 0 and print
# each of its `ratio: X` lines with X a positive decimal (never nan or inf),
# as many as it measures (COUNT).
#
# usage: bench_figures.sh COUNT LOCKSTEP bench ARGS...
set -uo pipefail
count=$1
shift
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
[ "$code" -eq 0 ] || { echo "FAIL: exit $code"; exit 1; }
ratios=$(printf '%s\n' "$out" | grep -cE '^ratio: [0-9]+\.[0-9]+( |$)')
[ "$ratios" -eq "$count" ] || { echo "FAIL: $ratios ratio lines, expected $count"; exit 1; }
if printf '%s\n' "$out" | grep -E '^ratio: ' | grep -qE '^ratio: 0\.00( |$)'; then
  echo "FAIL: a ratio of zero"; exit 1
fi
echo "ok: $ratios ratio lines"
