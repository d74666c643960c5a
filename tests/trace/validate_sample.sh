#!/usr/bin/env bash
# Runs the swarm seeds FIRST..LAST of a mode (lock: simple mode, or cluster),
# writes each trace, and has TLC validate them all against the mode's trace
# spec (spec/TraceLockServer.tla, spec/TraceLockCluster.tla) in one
# `lockstep validate-trace --require-coverage` call: it fails unless every
# trace is valid and together they cover every action branch and response
# kind of the spec.
#
# usage: validate_sample.sh LOCKSTEP WORK_DIR FIRST LAST [MODE]
set -uo pipefail
source "$(dirname "$0")/../require_tlc.sh"

lockstep=$1 work_dir=$2 first=$3 last=$4 mode=${5:-lock}
rm -rf "$work_dir" && mkdir -p "$work_dir"
for seed in $(seq "$first" "$last"); do
  if ! "$lockstep" sim --mode "$mode" --seed "$seed" --swarm --trace "$work_dir/seed-$seed.ndjson" >"$work_dir/seed-$seed.log"; then
    echo "FAIL: the simulator reports violations on seed $seed:"; cat "$work_dir/seed-$seed.log"; exit 1
  fi
done
traces=()
for seed in $(seq "$first" "$last"); do traces+=("$work_dir/seed-$seed.ndjson"); done
"$lockstep" validate-trace --require-coverage "${traces[@]}"
