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

source "$(dirname "$0")/tlc_run.sh"
run_tlc "$spec_dir" "$config" "$work_dir"
echo "$config ($module): ${tlc_distinct:-?} distinct states, depth ${tlc_depth:-?}, ${tlc_seconds}s wall (TLC, 2 workers)"

if [ -n "$violated" ]; then
  if grep -q "Invariant $violated is violated\|property $violated is violated" "$tlc_log"; then
    grep -m1 "is violated" "$tlc_log"
    echo "counter-example: $(grep -c '^State [0-9]*:' "$tlc_log") states"
    exit 0
  fi
  echo "FAIL: TLC did not report $violated violated (exit $tlc_status):"; tail -n 40 "$tlc_log"
  exit 1
fi
if [ $tlc_status -ne 0 ] || ! grep -q "No error has been found" "$tlc_log"; then
  echo "FAIL: TLC did not finish without error (exit $tlc_status):"; tail -n 60 "$tlc_log"
  exit 1
fi
exit 0
