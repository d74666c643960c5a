#!/usr/bin/env bash
# `check-history --vectors`: each key's violation of the checked-in LIFO run
# becomes a conformance vector. Each vector must pass on the correct engine
# (its expectations are the contract's) and fail on the engine with the
# LIFO hand-off bug (it pins the violation at an exact timing).
#
# usage: counterexample_vec.sh LOCKSTEP WORK_DIR HISTORY
set -uo pipefail
lockstep=$1 work_dir=$2 history=$3
rm -rf "$work_dir" && mkdir -p "$work_dir"
fail() { echo "FAIL: $*"; exit 1; }

"$lockstep" check-history "$history" --vectors "$work_dir/vectors" >"$work_dir/check.txt"
status=$?
cat "$work_dir/check.txt"
[ $status -eq 1 ] || fail "check-history exited $status, expected 1"
count=$(find "$work_dir/vectors" -name '*.vec' | wc -l)
[ "$count" -ge 1 ] || fail "no vector written"
[ "$(grep -c '^vector: ' "$work_dir/check.txt")" -eq "$count" ] || fail "the vectors written are not all named"

for vector in "$work_dir"/vectors/*.vec; do
  grep -q '^# .*the contract requires' "$vector" || fail "$vector does not say what the server did instead"
  "$lockstep" conform "$vector" || fail "$vector fails on the correct engine"
  "$lockstep" conform --inject-bug lifo-handoff "$vector"
  [ $? -eq 1 ] || fail "$vector passes on the engine with the LIFO hand-off"
done
echo "ok: $count vectors, each passes on the engine and fails with lifo-handoff"
