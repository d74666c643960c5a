#!/usr/bin/env bash
# One bug of the cluster catalogue, served by a one-node cluster on etcd
# with --inject-bug, must fail some mode=cluster vector when they are
# replayed exactly: `conform --exec-cluster` must exit 1 with a FAIL line
# (exit 2, a usage or start-up error, is not a catch).
#   conform_bug.sh LOCKSTEP BUG TEMPLATE VECTORS_DIR
set -uo pipefail
lockstep=$1 bug=$2 template=$3 vectors=$4
out=$("$lockstep" conform --exec-cluster "$template --inject-bug $bug" "$vectors"/cluster-*.vec 2>&1)
code=$?
echo "$out" | grep -E '^(FAIL|conform against)' | cut -c1-300
[ "$code" -eq 1 ] || { echo "expected exit 1, got $code"; exit 1; }
echo "$out" | grep -q '^FAIL ' || { echo "no FAIL line"; exit 1; }
echo "$bug: caught"
