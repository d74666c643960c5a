#!/usr/bin/env bash
# One black-box fuzzing run of our own server, started by the fuzzer.
#   fuzz.sh LOCKSTEP EXPECT SECONDS SEED [BUG] [RESTART_EVERY_S]
# EXPECT is "violation" (exit 1 required: the bug must be caught) or
# "no-false-alarm" (exit 0, or 2 when the search budget ran out and the
# checker said so; exit 1 on a correct server is a false alarm and fails).
set -uo pipefail
lockstep=$1 expect=$2 seconds=$3 seed=$4 bug=${5:-none} restart=${6:-0}
template="$lockstep serve --quiet --port {port} --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --sweep-ms {sweep_ms} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms} --state-file {state_file} --inject-bug $bug"
out=$("$lockstep" fuzz --exec "$template" --duration-s "$seconds" --seed "$seed" --restart-every-s "$restart" \
      --budget-states 3000000 2>&1)
code=$?
echo "$out" | grep -v '^  ' | tail -20
case "$expect" in
  violation)
    [ "$code" -eq 1 ] || { echo "expected the fuzzer to report a violation (exit 1), got exit $code"; exit 1; } ;;
  no-false-alarm)
    [ "$code" -eq 0 ] || [ "$code" -eq 2 ] || { echo "false alarm: exit $code on a correct server"; exit 1; }
    echo "$out" | grep -q '^violations: 0$' || { echo "no 'violations: 0' line"; exit 1; } ;;
esac
exit 0
