#!/usr/bin/env bash
# One bug of the cluster catalogue: the first swarm seed whose cluster trace
# it changes must fail TLC's validation against spec/TraceLockCluster.tla,
# at the right event. Both the seed and the event are found without TLC or
# the spec: the simulator is deterministic, so the same seed run without the
# bug takes the same steps until the bug first changes what some node does;
# the first event (trace line after the header) that differs between the two
# traces is where the bug shows, and TLC must name exactly that event. A
# traced run goes on past the simulator's first violation, so the trace
# searched is the trace validated.
#
# usage: cluster_bug_caught.sh LOCKSTEP WORK_DIR BUG [LAST_SEED]
set -uo pipefail
source "$(dirname "$0")/../require_tlc.sh"

lockstep=$1 work_dir=$2 bug=$3 last_seed=${4:-40}
mkdir -p "$work_dir"
clean="$work_dir/$bug-clean.ndjson" broken="$work_dir/$bug.ndjson"

# The events of a trace: every line but the header and the End line.
events() { sed '1d' "$1" | grep -v '"event":"End"'; }

seed="" shows_at=""
for s in $(seq 1 "$last_seed"); do
  "$lockstep" sim --mode cluster --seed "$s" --swarm --trace "$clean" >/dev/null
  "$lockstep" sim --mode cluster --seed "$s" --swarm --inject-bug "$bug" --trace "$broken" >/dev/null
  at=$(cmp <(events "$clean") <(events "$broken") 2>/dev/null | sed -n 's/.* line \([0-9]*\).*/\1/p')
  if [ -n "$at" ]; then seed=$s shows_at=$at; break; fi
done
if [ -z "$seed" ]; then
  echo "FAIL: no swarm seed of 1..$last_seed exercises $bug: every trace is the clean run's"; exit 1
fi

out=$("$lockstep" sim --mode cluster --seed "$seed" --swarm --inject-bug "$bug" --validate-trace)
status=$?
echo "$out" | sed -n '/^trace:/,$p'
invalid_at=$(echo "$out" | sed -n 's/^trace: invalid at event \([0-9]*\):.*/\1/p')
echo "$bug, seed $seed: the bug first changes event $shows_at; TLC: ${invalid_at:-no invalid event}"
if [ $status -ne 1 ]; then echo "FAIL: lockstep sim --validate-trace exited $status, not 1"; exit 1; fi
if [ "$invalid_at" != "$shows_at" ]; then echo "FAIL: TLC names event ${invalid_at:-none}, not $shows_at"; exit 1; fi
exit 0
