#!/usr/bin/env bash
# Prints what trace validation costs at its largest: runs the swarm seeds
# FIRST..LAST of a mode (lock: simple mode, or cluster), ranks their traces by
# the number of events, and has TLC validate the TOP largest, one at a time,
# printing per trace its events, the size of the TLA+ module, TLC's wall time
# and its CPU time (the JVM's, which a loaded machine does not inflate), then
# the slowest. Figures, not a test: nothing here fails on time; it exits 1
# only when a trace is not valid. Needs TLA2TOOLS_JAR (exit 77 without it,
# as the TLC tests).
#
# usage: scripts/trace_figures.sh LOCKSTEP MODE FIRST LAST [TOP]
#   e.g. scripts/trace_figures.sh build/default/lockstep lock 1 100 3
set -uo pipefail
source "$(dirname "$0")/../tests/require_tlc.sh"

lockstep=$1 mode=$2 first=$3 last=$4 top=${5:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

events() {  # the events TLC checks: server steps (lock), every line but header and End (cluster)
  if [ "$mode" = cluster ]; then sed '1d' "$1" | grep -vc '"event":"End"'
  else grep -cE '"event":"(Acquire|Release|Close|Tick|Restart)"' "$1"; fi
}

for seed in $(seq "$first" "$last"); do
  "$lockstep" sim --mode "$mode" --seed "$seed" --swarm --trace "$work/seed-$seed.ndjson" >/dev/null 2>&1
  echo "$(events "$work/seed-$seed.ndjson") $seed" >>"$work/sizes"
done
echo "trace validation figures: mode $mode, swarm seeds $first..$last, the $top largest traces"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
printf '%6s %9s %10s %10s %10s  %s\n' seed events module_MB tlc_wall_s tlc_cpu_s verdict
worst_wall=0 worst_cpu=0 worst_seed="" invalid=0
while read -r count seed; do
  out=$("$lockstep" validate-trace --keep-dir "$work/tla-$seed" "$work/seed-$seed.ndjson" 2>&1)
  verdict=$(echo "$out" | sed -n 's/^[^:]*: trace: \([a-z]*\).*/\1/p' | head -n 1)
  wall=$(echo "$out" | sed -n 's/.*slowest TLC run \([0-9.]*\) s (CPU \([0-9.]*\) s).*/\1/p')
  cpu=$(echo "$out" | sed -n 's/.*slowest TLC run \([0-9.]*\) s (CPU \([0-9.]*\) s).*/\2/p')
  size=$(stat -c %s "$work/tla-$seed/TraceRun.tla" 2>/dev/null || echo 0)
  printf '%6s %9s %10s %10s %10s  %s\n' "$seed" "$count" "$(awk -v b="$size" 'BEGIN { printf "%.1f", b / 1e6 }')" \
    "${wall:-?}" "${cpu:-?}" "${verdict:-?}"
  if [ -n "$wall" ] && awk -v a="$wall" -v b="$worst_wall" 'BEGIN { exit !(a > b) }'; then
    worst_wall=$wall worst_cpu=$cpu worst_seed=$seed
  fi
  [ "$verdict" = valid ] || invalid=1
  rm -rf "$work/tla-$seed"
done < <(sort -rn "$work/sizes" | head -n "$top")
echo "slowest: seed $worst_seed, TLC ${worst_wall} s wall, ${worst_cpu} s CPU (load average now $(cut -d' ' -f1 /proc/loadavg))"
exit $invalid
