#!/usr/bin/env bash
# One bug of the catalogue, one swarm seed: the seed's trace with the bug
# injected must fail TLC's validation, at the right event. The right event
# is found without TLC or the spec: the simulator is deterministic, so the
# same seed run without the bug takes the same steps until the bug first
# changes what the server does; the first server step (Acquire, Release,
# Close, Tick, Restart) whose line differs between the two traces is where
# the bug shows, and TLC must name exactly that event.
#
# The seed is the first swarm seed (1..20) whose run the simulator fails
# with the bug, found without TLC, so that a bug added to the catalogue
# needs no seed written down for it.
#
# usage: bug_caught.sh LOCKSTEP WORK_DIR BUG
set -uo pipefail
source "$(dirname "$0")/../require_tlc.sh"

lockstep=$1 work_dir=$2 bug=$3
mkdir -p "$work_dir"
seed=
for candidate in $(seq 1 20); do
  "$lockstep" sim --seed "$candidate" --swarm --inject-bug "$bug" --shrink-dir "$work_dir" >/dev/null 2>&1
  if [ $? -eq 1 ]; then seed=$candidate; break; fi
done
[ -n "$seed" ] || { echo "FAIL: no swarm seed of 1..20 fails with $bug"; exit 1; }
clean="$work_dir/$bug-clean.ndjson" broken="$work_dir/$bug.ndjson"

"$lockstep" sim --seed "$seed" --swarm --trace "$clean" >/dev/null
out=$("$lockstep" sim --seed "$seed" --swarm --inject-bug "$bug" --trace "$broken" --shrink-dir "$work_dir" --validate-trace)
status=$?
echo "$out" | sed -n '/^trace:/,$p'

server_steps() { grep -E '"event":"(Acquire|Release|Close|Tick|Restart)"' "$1"; }
shows_at=$(cmp <(server_steps "$clean") <(server_steps "$broken") 2>/dev/null | sed -n 's/.* line \([0-9]*\).*/\1/p')
if [ -z "$shows_at" ]; then
  echo "FAIL: seed $seed does not exercise $bug: its server steps are those of the clean run"; exit 1
fi
invalid_at=$(echo "$out" | sed -n 's/^trace: invalid at event \([0-9]*\):.*/\1/p')
echo "$bug, seed $seed: the bug first changes server step $shows_at; TLC: ${invalid_at:-no invalid event}"
if [ $status -eq 0 ]; then echo "FAIL: lockstep sim --validate-trace exited 0"; exit 1; fi
if [ "$invalid_at" != "$shows_at" ]; then echo "FAIL: TLC names event ${invalid_at:-none}, not $shows_at"; exit 1; fi
exit 0
