#!/usr/bin/env bash
# Runs TLC on one model-checking config of spec/LockCluster.tla (cluster
# mode), which only TLC checks: the C++ explorer of tlc_agrees.sh knows
# simple mode only. Fails unless TLC finds no error; with a property name as
# the fourth argument it checks the opposite: that TLC reports that property
# violated (the ClusterBug*.cfg configs, whose first line names the module
# they check, `\* module: ClusterMCx`). Prints the distinct states, depth and
# wall time either way.
#
# TLC is not part of the build: the test runs only when TLA2TOOLS_JAR names a
# tla2tools.jar, and otherwise exits 77, which CTest reports as skipped.
#
# usage: tlc_cluster.sh SPEC_DIR CONFIG_NAME WORK_DIR [VIOLATED_PROPERTY]
set -uo pipefail

spec_dir=$1 config=$2 work_dir=$3 violated=${4:-}
source "$(dirname "$0")/../require_tlc.sh"

module=${config%.cfg}
first_line=$(head -n 1 "$spec_dir/$config")
case $first_line in
  '\* module: '*) module=${first_line#'\* module: '} ;;
esac

mkdir -p "$work_dir"
tlc_log="$work_dir/${config%.cfg}.tlc.log"

started=$(date +%s.%N)
(cd "$spec_dir" && java -XX:+UseParallelGC -cp "$TLA2TOOLS_JAR" tlc2.TLC -workers 2 \
   -metadir "$work_dir/states-${config%.cfg}" -cleanup -config "$config" "$module.tla") \
  >"$tlc_log" 2>&1
status=$?
seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')

distinct=$(sed -n 's/.* \([0-9]*\) distinct states found.*/\1/p' "$tlc_log" | tail -n 1)
depth=$(sed -n 's/.*depth of the complete state graph search is \([0-9]*\).*/\1/p' "$tlc_log")
echo "$config ($module): ${distinct:-?} distinct states, depth ${depth:-?}, ${seconds}s wall (TLC, 2 workers)"

if [ -n "$violated" ]; then
  if grep -q "Invariant $violated is violated\|property $violated is violated" "$tlc_log"; then
    grep -m1 "is violated" "$tlc_log"
    echo "counter-example: $(grep -c '^State [0-9]*:' "$tlc_log") states"
    exit 0
  fi
  echo "FAIL: TLC did not report $violated violated (exit $status):"; tail -n 40 "$tlc_log"
  exit 1
fi
if [ $status -ne 0 ] || ! grep -q "No error has been found" "$tlc_log"; then
  echo "FAIL: TLC did not finish without error (exit $status):"; tail -n 60 "$tlc_log"
  exit 1
fi
exit 0
