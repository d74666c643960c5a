#!/usr/bin/env bash
# `conform --junit`: one <testcase> per vector file, a <failure> for a failed
# one, <skipped/> for a skipped one, and testsuite counts that agree; in
# process (against the engine with the LIFO hand-off bug) and through a live
# server with the same bug (`--exec`). The cluster vector runs in process (on
# a one-node cluster, where the simple-mode bug does not exist, so it passes)
# and is skipped live, since `serve` has simple mode only.
#
# usage: conform_junit.sh LOCKSTEP VECTORS_DIR WORK_DIR
set -uo pipefail
lockstep=$1 vectors=$2 work_dir=$3
here=$(dirname "$0")
rm -rf "$work_dir" && mkdir -p "$work_dir"
fail() { echo "FAIL: $*"; exit 1; }

failing=$vectors/contract-04-queued-at-tail.vec   # a hand-off, so LIFO fails it
passing=$vectors/edge-lease-boundary.vec          # no waiters, so LIFO passes it
cluster=$vectors/cluster-expire-chain.vec         # mode=cluster: runs in process, skipped live
for vector in "$failing" "$passing" "$cluster"; do [ -f "$vector" ] || fail "no vector $vector"; done

# In process: exit 1 (one failed), one case per file, none skipped.
"$lockstep" conform --inject-bug lifo-handoff --junit "$work_dir/engine.xml" "$failing" "$passing" "$cluster"
status=$?
[ $status -eq 1 ] || fail "conform --inject-bug lifo-handoff exited $status, expected 1"
python3 "$here/junit_check.py" "$work_dir/engine.xml" --expect tests=3 --expect failures=1 --expect skipped=0 \
  --expect errors=0 || fail "engine.xml"
grep -q "<testcase classname=\"lockstep.conform\" name=\"$failing\"" "$work_dir/engine.xml" ||
  fail "no test case named $failing with classname lockstep.conform"
grep -q "<failure message=\"FAIL $failing:[0-9]*: " "$work_dir/engine.xml" || fail "the failure message is not the verdict line"

# A clean run: every case passes, the cluster one too, and the exit code is 0.
"$lockstep" conform --junit "$work_dir/clean.xml" "$failing" "$passing" "$cluster" >/dev/null ||
  fail "clean conform exited non-zero"
python3 "$here/junit_check.py" "$work_dir/clean.xml" --expect tests=3 --expect failures=0 --expect skipped=0 ||
  fail "clean.xml"

# Live, exactly, through the test clock: the same verdicts for the simple
# vectors, the cluster one skipped, and the failure text carries the model's
# view of the keys.
serve="$lockstep serve --quiet --test-clock --port {port} --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --sweep-ms {sweep_ms} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms}"
"$lockstep" conform --exec "$serve --inject-bug lifo-handoff" --junit "$work_dir/live.xml" "$failing" "$passing" "$cluster"
status=$?
[ $status -eq 1 ] || fail "conform --exec (lifo-handoff) exited $status, expected 1"
python3 "$here/junit_check.py" "$work_dir/live.xml" --expect tests=3 --expect failures=1 --expect skipped=1 ||
  fail "live.xml"
grep -q "<skipped message=\"mode=cluster vectors need a cluster-mode server\"" "$work_dir/live.xml" ||
  fail "the live run did not skip the cluster vector"
grep -q "the model at" "$work_dir/live.xml" || fail "the live failure text lacks the model's view"
echo "ok"
