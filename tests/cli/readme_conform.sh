#!/usr/bin/env bash
# The exact replay of the whole corpus (docs/testing-your-server.md) against this project's own
# servers, run as written from the source root
# with this build's lockstep: `conform --exec` for the simple-mode vectors and
# `--exec-cluster` for the mode=cluster ones, in one run, each mode on its own
# template (the cluster's on a one-member etcd that conform starts). It must
# exit 0 and pass every vector of tests/vectors, none failed or skipped.
#
# usage: readme_conform.sh LOCKSTEP SOURCE_DIR
set -uo pipefail
lockstep=$1 source_dir=$2
cd "$source_dir" || exit 1
command=$(grep -E "^build/default/lockstep conform --exec 'build/default/lockstep serve .*--exec-cluster '" docs/testing-your-server.md)
[ "$(printf '%s\n' "$command" | grep -c .)" -eq 1 ] || { echo "FAIL: the conform command of docs/testing-your-server.md was not found once"; exit 1; }
command=${command//build\/default\/lockstep/$lockstep}
out=$(eval "$command" 2>&1)
code=$?
printf '%s\n' "$out" | grep -v '^ok '
[ "$code" -eq 0 ] || { echo "FAIL: exit $code"; exit 1; }
vectors=$(find tests/vectors -name '*.vec' | wc -l)
cluster=$(grep -l 'mode=cluster' $(find tests/vectors -name '*.vec') | wc -l)
summary=$(printf '%s\n' "$out" | grep -E '^conform against ' | tail -1)
[[ $summary == *": $vectors passed, 0 failed, 0 skipped" ]] || { echo "FAIL: expected $vectors passed, 0 failed, 0 skipped"; exit 1; }
[[ $summary == "conform against '$lockstep serve --test-clock "*"' and '$lockstep serve --cluster "* ]] ||
  { echo "FAIL: the summary does not name both templates"; exit 1; }
[ "$cluster" -gt 0 ] || { echo "FAIL: no mode=cluster vector in the corpus"; exit 1; }
echo "ok: $vectors vectors, $cluster of them on a cluster node"
