#!/usr/bin/env bash
# Runs split into shards and added up again: `sim` and `miss-rate` with
# `--shard I/N --summary-json FILE`, then `lockstep merge`. Checked:
# - the shards of 1..10 in 4 are 1..3, 4..6, 7..8 and 9..10 (their
#   summaries say which seeds they ran), together every seed once;
# - the merge of 4 shards prints what the unsharded run prints, byte for
#   byte, but for the lines of wall time (`wall time (s)`, `events/s`,
#   `speed:` in sim, `wall time:` in miss-rate: the shards' machine time
#   added up, not one run's) and the vector a failing run shrinks
#   (`shrunk:`, `replay:`: each shard shrinks its own first failure, the
#   merge none), and exits as it does: a simple-mode swarm with an injected
#   bug (failure reports and table), a clean cluster-mode swarm, and the
#   commands of docs/ci-fuzzing.md's "Shards" as written there (only the
#   seed ranges made small), with the shards given to merge in any order;
# - merge refuses, with exit 2 and one line naming what is wrong, a missing
#   shard, a shard given twice, shards of two different runs, and a file
#   that is not a summary.
# usage: shards.sh LOCKSTEP SOURCE_DIR WORK_DIR
set -uo pipefail
lockstep=$1 source_dir=$2 work=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
# The lines no merge can reproduce (see above).
comparable() { grep -Ev '^  (wall time \(s\)|events/s|shrunk:|replay:|shrink:) |^speed: |^wall time: ' "$1"; }

# compare NAME 'OPTIONS' [SHARD_ORDER]: one run, then 4 shards merged.
compare() {
  local name=$1 options=$2 order=${3:-"3 1 4 2"}
  mkdir -p "$name" && cd "$name" || exit 1
  eval "\"$lockstep\" $options" >whole.out 2>whole.err
  local whole_status=$?
  [ $whole_status -le 1 ] || fail "$name: the unsharded run exited $whole_status: $(cat whole.err)"
  for shard in 1 2 3 4; do
    eval "\"$lockstep\" $options --shard $shard/4 --summary-json shard-$shard.json" >shard-$shard.out 2>&1
    [ $? -le 1 ] || fail "$name: shard $shard/4 failed: $(tail -2 shard-$shard.out)"
  done
  local files=()
  for shard in $order; do files+=("shard-$shard.json"); done
  "$lockstep" merge "${files[@]}" >merged.out 2>merged.err
  local merged_status=$?
  [ $merged_status -eq $whole_status ] || fail "$name: merge exited $merged_status, the run $whole_status: $(cat merged.err)"
  comparable whole.out >whole.cmp
  comparable merged.out >merged.cmp
  diff whole.cmp merged.cmp >diff.out || { head -20 diff.out; fail "$name: the merge differs from the unsharded run"; }
  [ "$(wc -l <whole.cmp)" -ge 10 ] || fail "$name: the run printed almost nothing"
  echo "$name: 4 shards merged = one run ($(wc -l <whole.cmp) lines compared, $(grep -c '^FAIL seed' whole.cmp) failing seeds, exit $whole_status)"
  cd ..
}

# The split itself, read from the summaries.
for shard in 1 2 3 4; do
  "$lockstep" sim --seeds 1..10 --duration-ms 2000 --shard $shard/4 --summary-json split-$shard.json >/dev/null || fail "sim --shard $shard/4 failed"
done
split=$(python3 -c '
import json, sys
print(" ".join("{}..{}".format(*json.load(open(f"split-{i}.json"))["shard_seeds"]) for i in (1, 2, 3, 4)))
print(sum(json.load(open(f"split-{i}.json"))["summary"]["seeds"] for i in (1, 2, 3, 4)))')
[ "$split" = "$(printf '1..3 4..6 7..8 9..10\n10')" ] || fail "the shards of 1..10 in 4 are $split"
echo "split: 1..10 in 4 shards is $(echo $split | cut -d' ' -f1-4)"

compare lifo "sim --seeds 1..24 --swarm --inject-bug lifo-handoff --shrink-dir ."
grep -q '^FAIL seed' lifo/whole.out || fail "lifo: the injected bug failed no seed, so no failure report was compared"
compare cluster "sim --mode cluster --nodes 3 --seeds 1..8 --swarm" "4 3 2 1"

# docs/ci-fuzzing.md, "Shards": each shard's commands and the merges, as
# written, with SHARD and SHARDS set as the CI systems there set them.
doc=$source_dir/docs/ci-fuzzing.md
mapfile -t shard_lines < <(sed -n '/<!-- shard-commands -->/,/^```$/p' "$doc" | grep '^lockstep ')
mapfile -t merge_lines < <(sed -n '/<!-- merge-commands -->/,/^```$/p' "$doc" | grep '^lockstep ')
[ ${#shard_lines[@]} -ge 2 ] && [ ${#merge_lines[@]} -eq ${#shard_lines[@]} ] ||
  fail "docs/ci-fuzzing.md has no shard-commands and merge-commands blocks of as many lines"
mkdir -p doc && cd doc || exit 1
small() { sed -e 's/--seeds 1\.\.100000/--seeds 1..16/' -e 's/--seeds 1\.\.2000/--seeds 11..14/' <<<"$1"; }
for i in "${!shard_lines[@]}"; do
  command=$(small "${shard_lines[$i]}")
  whole=$(sed -e 's/ --shard "$SHARD\/$SHARDS"//' -e 's/ --summary-json "[^"]*"//' <<<"$command")
  [ "$whole" != "$command" ] || fail "'${shard_lines[$i]}' has no --shard \"\$SHARD/\$SHARDS\" --summary-json"
  eval "${whole/lockstep/\"$lockstep\"}" >whole-$i.out 2>&1
  whole_status=$?
  for SHARD in 2 4 1 3; do
    SHARDS=4 SHARD=$SHARD eval "${command/lockstep/\"$lockstep\"}" >/dev/null 2>&1
    [ $? -le 1 ] || fail "'$command' failed with SHARD=$SHARD"
  done
  eval "${merge_lines[$i]/lockstep/\"$lockstep\"}" >merged-$i.out 2>&1
  [ $? -eq $whole_status ] || fail "'${merge_lines[$i]}' exits otherwise than the run"
  diff <(comparable whole-$i.out) <(comparable merged-$i.out) >/dev/null ||
    fail "'${merge_lines[$i]}' differs from the unsharded run of '${shard_lines[$i]}'"
  echo "docs: '${shard_lines[$i]}' in 4 shards, then '${merge_lines[$i]}': as one run"
done
# The CI recipes run exactly these lines.
for line in $(grep -n 'lockstep \(sim\|miss-rate\|merge\) ' "$doc" | cut -d: -f1); do
  text=$(sed -n "${line}p" "$doc" | sed -e 's/^ *\(- \(run: \)\?\)\?//' -e 's/^run: //' -e "s/^\(args: \)\?//")
  case "$text" in lockstep*) ;; *) continue ;; esac
  printf '%s\n' "${shard_lines[@]}" "${merge_lines[@]}" | grep -qxF -- "$text" ||
    fail "docs/ci-fuzzing.md line $line runs '$text', which is not a command this test runs"
done
cd ..

# Refusals.
refused() {  # EXPECTED_TEXT FILE...
  local expected=$1; shift
  "$lockstep" merge "$@" >refused.out 2>refused.err
  local status=$?
  [ $status -eq 2 ] || fail "merge $* exited $status, expected 2"
  [ "$(wc -l <refused.err)" -eq 1 ] && grep -q "^merge: .*$expected" refused.err ||
    fail "merge $*: '$(cat refused.err)' is not one line saying '$expected'"
  [ -s refused.out ] && fail "merge $* printed a table although it refused"
  echo "refused: $(cat refused.err)"
}
refused "shard 3/4 of .* is missing (seeds 13..18)" lifo/shard-1.json lifo/shard-2.json lifo/shard-4.json
refused "are both shard 2/4" lifo/shard-1.json lifo/shard-2.json lifo/shard-2.json lifo/shard-3.json lifo/shard-4.json
refused "lifo/shard-2.json is a shard of .lockstep sim --mode lock .*, but cluster/shard-1.json of" cluster/shard-1.json lifo/shard-2.json
echo '{"schema":"something else"}' >not-a-summary.json
refused "not a summary" not-a-summary.json
echo ok
