#!/usr/bin/env bash
# How long the black-box checker takes over a cluster's history of the size
# docs/testing-your-server.md quotes: `fuzz --mode cluster` records 60 s of 50 clients on 100
# keys against three `serve --cluster` nodes on three etcd members (all
# started by the fuzzer), the nemesis killing, pausing or restarting a node
# every 5 s; then `check-history` reads the history alone, timed. Prints
# the history's size and `check-history: X s wall, Y s CPU` (a figure, not a
# limit: it depends on the machine and its load). Exit: check-history's
# (0 when the cluster conforms), or 2 if the history could not be recorded.
#   scripts/cluster_check_speed.sh [LOCKSTEP] [SECONDS]
set -uo pipefail
lockstep=${1:-build/default/lockstep}
seconds=${2:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
template="exec $lockstep serve --cluster --quiet --etcd {etcd} --prefix {prefix} --init --members {members} --node-id {node} --advertise 127.0.0.1:{port} --port {port} --leader-ttl-s 2 --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms}"
"$lockstep" fuzz --mode cluster --exec-node "$template" --nodes 3 --etcd-members 3 --clients 50 --keys 100 \
  --duration-s "$seconds" --nemesis kill,pause,restart --nemesis-every-s 5 --max-lateness-ms 8000 \
  --history "$work/history.ndjson" > "$work/fuzz.out" 2>&1
[ -s "$work/history.ndjson" ] || { echo "no history recorded:"; tail -5 "$work/fuzz.out"; exit 2; }
grep -E '^(run|tester):' "$work/fuzz.out"
echo "history: $(wc -l < "$work/history.ndjson") lines, $(grep -c '"ev":"send"' "$work/history.ndjson") requests, $(grep -c '"ev":"recv"' "$work/history.ndjson") responses, $(grep -c '"ev":"nemesis"' "$work/history.ndjson") nemesis steps"
TIMEFORMAT='%R %U %S'
{ time "$lockstep" check-history "$work/history.ndjson" > "$work/check.out" 2>&1; } 2> "$work/time.out"
code=$?
grep -E '^(search|worst lateness|verdict|violations):' "$work/check.out"
read -r wall user system < "$work/time.out"
echo "check-history: $wall s wall, $(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.2f", u + s }') s CPU"
exit $code
