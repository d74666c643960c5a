#!/usr/bin/env bash
# The verdicts of two builds of `check-history` on the cluster histories the
# project keeps, side by side: the clean swarm seeds of the cluster simulator
# (`sim --mode cluster --seed N --swarm --history h`, each build's simulator
# writing its own history, read with the maximum lateness that run states),
# and any history files named after `--` (recorded runs, read by both).
# Prints one line per history whose verdict differs (with the new build's
# findings), then how many worst-lateness figures differ, the slowest checks
# of each build (CPU seconds) and the counts.
#   scripts/cluster_verdicts.sh OLD NEW FIRST..LAST [-- FILE...]
# OLD and NEW are lockstep binaries; each check may take TIMEOUT_S seconds
# (default 300) before it counts as `timeout`.
set -uo pipefail
old=$1 new=$2 range=$3
shift 3
[ "${1:-}" = "--" ] && shift
first=${range%..*} last=${range#*..}
limit=${TIMEOUT_S:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
same=0 changed=0 late_changed=0
summary() {  # verdict, worst-lateness figure and CPU seconds of a check
  local verdict late cpu
  verdict=$(sed -n 's/^verdict: \([a-z]*\).*/\1/p' "$1")
  late=$(sed -n 's/^worst lateness: \(at least \)\{0,1\}\([0-9]*\) ms.*/\2/p' "$1")
  cpu=$(sed -n 's/^cpu //p' "$1" | tail -1)
  echo "${verdict:-timeout} ${late:--} ${cpu:--}"
}
check() {  # binary history output
  { /usr/bin/time -f "cpu %U" timeout "$limit" "$1" check-history "$2" > "$3"; } 2>> "$3"
}
compare() {  # name old-history new-history
  check "$old" "$2" "$work/old.out"
  check "$new" "$3" "$work/new.out"
  read -r av al at <<< "$(summary "$work/old.out")"
  read -r bv bl bt <<< "$(summary "$work/new.out")"
  echo "$at $1" >> "$work/old.times"
  echo "$bt $1" >> "$work/new.times"
  [ "$al" = "$bl" ] || late_changed=$((late_changed + 1))
  if [ "$av" = "$bv" ]; then
    same=$((same + 1))
  else
    changed=$((changed + 1))
    echo "$1: $av -> $bv"
    grep -E '^(violation|unknown)' "$work/new.out" | head -3 | cut -c1-300 | sed 's/^/    /'
  fi
}
for seed in $(seq "$first" "$last"); do
  "$old" sim --mode cluster --seed "$seed" --swarm --history "$work/old.ndjson" > /dev/null 2>&1
  "$new" sim --mode cluster --seed "$seed" --swarm --history "$work/new.ndjson" > /dev/null 2>&1
  compare "seed $seed" "$work/old.ndjson" "$work/new.ndjson"
done
for file in "$@"; do compare "$file" "$file" "$file"; done
for build in old new; do
  echo "slowest with $build (CPU s): $(sort -rn "$work/$build.times" | head -5 | tr '\n' ';' | sed 's/;$//')"
  echo "total CPU with $build: $(awk '$1 != "-" { s += $1 } END { printf "%.1f s", s }' "$work/$build.times")"
done
echo "histories: $((same + changed)), same verdict: $same, changed: $changed (worst lateness differs on $late_changed)"
