#!/usr/bin/env bash
# What works without TLC: a trace becomes a TLA+ module and config that name
# the run's events, and `sim --validate-trace` without TLA2TOOLS_JAR refuses
# with a clear message and a non-zero exit instead of passing.
#
# usage: without_tlc.sh LOCKSTEP WORK_DIR
set -uo pipefail
lockstep=$1 work_dir=$2
rm -rf "$work_dir" && mkdir -p "$work_dir"
fail() { echo "FAIL: $*"; exit 1; }

"$lockstep" sim --seed 3 --swarm --trace "$work_dir/seed-3.ndjson" >/dev/null || fail "sim --seed 3 --swarm"
out=$("$lockstep" trace-to-tla "$work_dir/seed-3.ndjson" -o "$work_dir/tla") || fail "trace-to-tla exited non-zero"
echo "$out"
steps=$(grep -cE '"event":"(Acquire|Release|Close|Tick|Restart)"' "$work_dir/seed-3.ndjson")
echo "$out" | grep -q "($steps events)" || fail "trace-to-tla does not report the trace's $steps server steps"
records=$(grep -c '^  <<"' "$work_dir/tla/TraceRun.tla")
[ "$records" -eq "$steps" ] || fail "TraceRun.tla holds $records records for $steps server steps"
grep -q '^INIT TraceInit' "$work_dir/tla/TraceRun.cfg" || fail "TraceRun.cfg has no INIT TraceInit"
for module in LockServer TraceLockServer; do
  [ -s "$work_dir/tla/$module.tla" ] || fail "$module.tla not written"
done

refusal=$(env -u TLA2TOOLS_JAR "$lockstep" sim --seed 3 --validate-trace 2>&1)
status=$?
echo "$refusal" | tail -n 1
[ $status -ne 0 ] || fail "sim --validate-trace without TLA2TOOLS_JAR exited 0"
echo "$refusal" | grep -q "needs TLC: TLA2TOOLS_JAR is not set" || fail "no clear message without TLA2TOOLS_JAR"
echo "ok"
