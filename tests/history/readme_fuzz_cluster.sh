#!/usr/bin/env bash
# The "Fuzzing a cluster" example of docs/testing-your-server.md run as written (with this build's
# lockstep), in a folder of its own: three nodes on three etcd members under
# the nemesis for 20 s must conform (exit 0, `violations: 0`), with the
# nemesis steps in the history's report. A run the machine itself ran half
# the maximum lateness late judges the machine: skipped (77), never passed.
#   readme_fuzz_cluster.sh LOCKSTEP DOCUMENT WORK_DIR
set -uo pipefail
lockstep=$1 readme=$2 work=$3
source "$(dirname "$0")/machine_late.sh"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
command=$(awk '/<!-- fuzzing-a-cluster -->/ {found=1; next} found && /^```$/ {if (inside) exit; inside=1; next} found && inside' "$readme")
[ -n "$command" ] || { echo "the example of $readme was not found"; exit 1; }
out=$(eval "${command//build\/default\/lockstep/$lockstep}" 2>&1)
code=$?
echo "$out" | grep -Ev '^(  |node n)' | tail -10
late_ms=$(machine_late_ms)
if [ "$code" -ne 0 ] && [ -n "$late_ms" ] && [ "$late_ms" -ge 4000 ]; then
  echo "SKIPPED: the machine ran the fuzzer $late_ms ms late"; exit 77
fi
[ "$code" -eq 0 ] || { echo "exit $code, expected 0"; exit 1; }
grep -q '^violations: 0$' <<<"$out" || { echo "no 'violations: 0' line"; exit 1; }
grep -q "id='nemesis-timeline'" cluster.html || { echo "the report shows no nemesis"; exit 1; }
echo "the documented example: conforms, report with the nemesis written"
