#!/usr/bin/env bash
# Runs TLC on one model-checking config of spec/LockServer.tla and the C++
# explorer (`lockstep check`) on the same config, and fails unless TLC finds
# no error and both count the same distinct states. With a property name as
# the fifth argument it checks the opposite: that TLC and the explorer both
# report that property violated (the bug-injection configs).
#
# TLC is not part of the build: the test runs only when TLA2TOOLS_JAR names a
# tla2tools.jar, and otherwise exits 77, which CTest reports as skipped.
#
# usage: tlc_agrees.sh LOCKSTEP SPEC_DIR CONFIG_NAME WORK_DIR [VIOLATED_PROPERTY]
set -uo pipefail

lockstep=$1 spec_dir=$2 config=$3 work_dir=$4 violated=${5:-}
source "$(dirname "$0")/../require_tlc.sh"

source "$(dirname "$0")/tlc_run.sh"
run_tlc "$spec_dir" "$config" "$work_dir"
check_log="$work_dir/${config%.cfg}.check.log"

# Timed as a whole process, as TLC is (its JVM start included): the ratio
# of the two wall times is the figure docs/performance.md states.
check_started=$(date +%s.%N)
"$lockstep" check --cfg "$spec_dir/$config" >"$check_log" 2>&1
check_status=$?
check_seconds=$(awk -v a="$check_started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')

tlc_finished=$(sed -n 's/^Finished in \([0-9]*\)s.*/\1/p' "$tlc_log")
check_distinct=$(sed -n 's/^distinct states: //p' "$check_log")
check_generated=$(sed -n 's/^states generated: //p' "$check_log")
check_depth=$(sed -n 's/^depth: //p' "$check_log")
check_rate=$(sed -n 's/^distinct states\/s: //p' "$check_log")

if [ -n "$violated" ]; then
  tlc_saw=no explorer_saw=no
  grep -q "property $violated is violated\|Invariant $violated is violated" "$tlc_log" && tlc_saw=yes
  grep -q "^VIOLATION of $violated" "$check_log" && explorer_saw=yes
  echo "$config: $violated violated: TLC $tlc_saw, explorer $explorer_saw"
  grep -m1 "is violated" "$tlc_log"
  grep -m1 "^VIOLATION" "$check_log"
  echo "TLC's counter-example: $(grep -c '^State [0-9]*:' "$tlc_log") states;" \
       "the explorer's: $(sed -n 's/^shortest counter-example, \([0-9]*\) steps:/\1/p' "$check_log") steps"
  [ "$tlc_saw" = yes ] && [ "$explorer_saw" = yes ] && exit 0
  echo "--- TLC"; tail -n 40 "$tlc_log"; echo "--- explorer"; cat "$check_log"
  exit 1
fi

rate() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%d", n / s }'; }
tlc_rate=$( [ -n "$tlc_distinct" ] && rate "$tlc_distinct" "$tlc_seconds" )
echo "$config            TLC (2 workers)   explorer"
echo "distinct states:   $tlc_distinct   $check_distinct"
echo "states generated:  $tlc_generated   $check_generated"
echo "depth:             $tlc_depth   $check_depth"
echo "distinct states/s: ${tlc_rate:-?} (${tlc_seconds}s wall, TLC says ${tlc_finished:-?}s)   $check_rate"
echo "whole process:     ${tlc_seconds}s   ${check_seconds}s"
echo "TLC / explorer, whole processes: $(awk -v a="$tlc_seconds" -v b="$check_seconds" 'BEGIN { printf "%.1f", a / b }')x"
[ -n "$tlc_rate" ] && [ -n "$check_rate" ] && [ "$tlc_rate" -gt 0 ] &&
  echo "explorer's search rate / TLC's whole-process rate: $(awk -v a="$check_rate" -v b="$tlc_rate" 'BEGIN { printf "%.1f", a / b }')x"

status=0
if [ $tlc_status -ne 0 ] || ! grep -q "No error has been found" "$tlc_log"; then
  echo "FAIL: TLC did not finish without error (exit $tlc_status):"; tail -n 40 "$tlc_log"; status=1
fi
if [ $check_status -ne 0 ]; then
  echo "FAIL: lockstep check exited $check_status:"; cat "$check_log"; status=1
fi
if [ -z "$tlc_distinct" ] || [ "$tlc_distinct" != "$check_distinct" ]; then
  echo "FAIL: distinct states differ: TLC ${tlc_distinct:-none}, explorer ${check_distinct:-none}"
  status=1
fi
exit $status
