#!/usr/bin/env bash
# What works without TLC: a trace, of simple mode or of cluster mode, becomes
# a TLA+ module and config that name the run's events, and `sim
# --validate-trace` without TLA2TOOLS_JAR refuses with a clear message and
# exit 2 instead of passing.
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
grep -q '^VIEW TraceView' "$work_dir/tla/TraceRun.cfg" || fail "TraceRun.cfg has no VIEW"
for module in LockServer TraceLockServer; do
  [ -s "$work_dir/tla/$module.tla" ] || fail "$module.tla not written"
done

refusal=$(env -u TLA2TOOLS_JAR "$lockstep" sim --seed 3 --validate-trace 2>&1)
status=$?
echo "$refusal" | tail -n 1
[ $status -eq 2 ] || fail "sim --validate-trace without TLA2TOOLS_JAR exited $status, not 2"
echo "$refusal" | grep -q "needs TLC: TLA2TOOLS_JAR is not set" || fail "no clear message without TLA2TOOLS_JAR"

# Cluster mode: every line between the header and the End line is an event.
"$lockstep" sim --mode cluster --seed 3 --swarm --trace "$work_dir/cluster-3.ndjson" >/dev/null || fail "sim --mode cluster --seed 3 --swarm"
out=$("$lockstep" trace-to-tla "$work_dir/cluster-3.ndjson" -o "$work_dir/cluster-tla") || fail "trace-to-tla of a cluster trace exited non-zero"
echo "$out" | head -n 1
events=$(sed '1d' "$work_dir/cluster-3.ndjson" | grep -vc '"event":"End"')
echo "$out" | grep -q "($events events)" || fail "trace-to-tla does not report the cluster trace's $events events"
records=$(grep -c '^  <<"' "$work_dir/cluster-tla/TraceRun.tla")
[ "$records" -eq "$events" ] || fail "TraceRun.tla holds $records records for $events cluster events"
grep -q '^VIEW TraceView' "$work_dir/cluster-tla/TraceRun.cfg" || fail "the cluster config has no VIEW"
for module in LockCluster TraceLockCluster; do
  [ -s "$work_dir/cluster-tla/$module.tla" ] || fail "$module.tla not written"
done
# The spec's commit is an entry's first application anywhere: a node that
# applies entries again after a restart commits none of them twice. Seed 4
# restarts, from no snapshot, the node that first applied the newest entry.
"$lockstep" sim --mode cluster --seed 4 --swarm --trace "$work_dir/cluster-4.ndjson" >/dev/null || fail "sim --mode cluster --seed 4 --swarm"
grep -q '"event":"Restart","node":[0-9]*,"index":0}' "$work_dir/cluster-4.ndjson" || fail "seed 4 no longer restarts a node from nothing"
twice=$(sed -n 's/^{"t":[0-9]*,"event":"Commit","index":\([0-9]*\),.*/\1/p' "$work_dir/cluster-4.ndjson" | sort -n | uniq -d | head -n 1)
[ -z "$twice" ] || fail "index $twice of seed 4 is committed twice in its cluster trace"
refusal=$(env -u TLA2TOOLS_JAR "$lockstep" sim --mode cluster --seed 3 --validate-trace 2>&1)
status=$?
echo "$refusal" | tail -n 1
[ $status -eq 2 ] || fail "sim --mode cluster --validate-trace without TLA2TOOLS_JAR exited $status, not 2"
echo "$refusal" | grep -q "needs TLC: TLA2TOOLS_JAR is not set" || fail "no clear message in cluster mode"
"$lockstep" sim --mode raft --seed 3 --trace "$work_dir/raft.ndjson" >/dev/null 2>&1
[ $? -eq 2 ] || fail "sim --mode raft --trace is not refused with exit 2"
echo "ok"
