#!/usr/bin/env bash
# A vector shrunk by `lockstep sim` must hold against any correct server,
# not only one whose tokens are the model's (1, 2, ...): it names every
# token by its `$name`. Shrink the first failing seeds of two bugs whose
# vectors release a granted token (lifo-handoff: an R that echoes it;
# stale-release: an N), then replay them exactly against `lockstep serve
# --test-clock` started with a state file whose mark makes its tokens start
# near 2^62: they must pass there, and still fail with their bug.
#
# usage: shrunk_vector_live.sh LOCKSTEP WORK_DIR
set -uo pipefail
lockstep=$(realpath "$1") work=$(realpath -m "$2")
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

echo 4611686018427387904 >"$work/tokens.state"
serve="$lockstep serve --quiet --test-clock --port {port} --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --sweep-ms {sweep_ms} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms} --state-file $work/tokens.state"

for bug in lifo-handoff stale-release; do
  "$lockstep" sim --seeds 1..30 --swarm --inject-bug "$bug" --shrink-dir "$work/$bug" >"$work/$bug.out"
  [ $? -eq 1 ] || fail "sim --inject-bug $bug did not report a violation"
  vector=$(ls "$work/$bug"/*.vec 2>/dev/null | head -1)
  [ -n "$vector" ] || fail "sim --inject-bug $bug wrote no shrunk vector: $(grep -m3 shrink "$work/$bug.out")"
  cat "$vector"
  # The case this checks: a response that echoes a granted token.
  grep -qE '^expect [0-9]+ c[0-9]+ [RN] \$t[0-9]+ ' "$vector" || fail "$vector has no R or N naming a token"
  if grep -qE '^(expect [0-9]+ c[0-9]+ [ARN]|at [0-9]+ c[0-9]+ R [^ ]+) [0-9]{1,11}( |$)' "$vector"; then
    fail "$vector writes a granted token by its value"
  fi
  "$lockstep" conform --exec "$serve" "$vector" || fail "$vector fails against serve with tokens near 2^62"
  "$lockstep" conform --inject-bug "$bug" "$vector" >/dev/null
  [ $? -eq 1 ] || fail "$vector passes on the engine with $bug"
done
first=$(cat "$work/tokens.state")
[ "$first" -gt 4611686018427387904 ] || fail "the servers did not issue tokens above the state file's mark"
echo "ok: shrunk vectors pass against serve with tokens near 2^62 and fail with their bug"
