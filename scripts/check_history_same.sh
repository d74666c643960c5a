#!/usr/bin/env bash
# Whether two builds of `check-history` print the same bytes: for a change
# that must not change a verdict or a word of it (a re-layout, a speed-up).
# Each seed of FIRST..LAST gives a simulator run of each mode (`sim --mode
# lock` and `sim --mode cluster`, written by NEW's simulator), correct or
# with a bug of the mode's catalogue (the seed picks which, `none` among
# them; a run with a bug lasts 2 s, whose violations' stories are enough to
# compare, where a whole run's take a minute), and both builds read it; so do any history files named after `--`.
# Prints each history whose output differs (with a diff of its first lines),
# then the counts and a digest of every output of NEW, and exits 1 on any
# difference. With CHECK_SAME_IGNORE set to an extended regular expression,
# lines matching it are left out of both outputs (a change that moves the
# search's own statistics, `^search: `, and must move nothing else).
#   scripts/check_history_same.sh OLD NEW FIRST..LAST [-- FILE...]
set -uo pipefail
old=$1 new=$2 range=$3
shift 3
[ "${1:-}" = "--" ] && shift
first=${range%..*} last=${range#*..}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
same=0 differ=0
: > "$work/all.out"
compare() {  # name history [mode]
  local mode_option=()
  [ -n "${3:-}" ] && mode_option=(--mode "$3")
  "$old" check-history "${mode_option[@]}" "$2" > "$work/old.out" 2>&1; echo "exit $?" >> "$work/old.out"
  "$new" check-history "${mode_option[@]}" "$2" > "$work/new.out" 2>&1; echo "exit $?" >> "$work/new.out"
  if [ -n "${CHECK_SAME_IGNORE:-}" ]; then
    grep -Ev "$CHECK_SAME_IGNORE" "$work/old.out" > "$work/old.kept"; mv "$work/old.kept" "$work/old.out"
    grep -Ev "$CHECK_SAME_IGNORE" "$work/new.out" > "$work/new.kept"; mv "$work/new.kept" "$work/new.out"
  fi
  cat "$work/new.out" >> "$work/all.out"
  if cmp -s "$work/old.out" "$work/new.out"; then
    same=$((same + 1))
  else
    differ=$((differ + 1))
    echo "differs: $1"
    diff "$work/old.out" "$work/new.out" | head -10
  fi
}
bugs_of() {  # the catalogue a mode's --inject-bug takes, and none
  echo none
  "$new" serve "$@" --list-bugs 2>/dev/null | awk '{print $1}'
}
mapfile -t lock_bugs < <(bugs_of)
mapfile -t cluster_bugs < <(bugs_of --cluster)
run() {  # mode seed bug: a simulator run's history, read by both
  local length=()
  [ "$3" = none ] || length=(--duration-ms 2000)
  "$new" sim --mode "$1" --seed "$2" --inject-bug "$3" "${length[@]}" --history "$work/h.ndjson" > /dev/null 2>&1
  compare "$1 seed $2 ($3)" "$work/h.ndjson" "$([ "$1" = cluster ] && echo cluster)"
}
for seed in $(seq "$first" "$last"); do
  run lock "$seed" "${lock_bugs[$((seed % ${#lock_bugs[@]}))]}"
  run cluster "$seed" "${cluster_bugs[$((seed % ${#cluster_bugs[@]}))]}"
done
for file in "$@"; do compare "$file" "$file"; done
echo "same: $same, differ: $differ; digest of the new outputs: $(sha256sum < "$work/all.out" | cut -c1-16)"
[ "$differ" -eq 0 ]
