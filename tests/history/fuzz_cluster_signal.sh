#!/usr/bin/env bash
# `fuzz --mode cluster` stopped by SIGTERM or SIGINT while its nodes and etcd
# members run: it must leave no process behind and remove its temporary
# folders (the nodes' logs and clock files, etcd's data), as a normal exit
# does. The run has everything the fuzzer can put around the processes:
# relays for the clients, the nodes' etcd links and etcd's peers (a nemesis
# of link faults, none due before the signal), and wrong clocks.
#
# The nodes' command lines carry `--prefix lockstep-PID-XXXXXX`, which names
# their folder $TMPDIR/lockstep-cluster-XXXXXX (or /tmp/...), and the etcd members' command
# lines name their data folders. Both are looked up while the run
# goes on, then checked after the signal.
# Usage: fuzz_cluster_signal.sh LOCKSTEP SIGNAL
set -uo pipefail
lockstep=$1
signal=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/out" 2>/dev/null | head -20; exit 1; }

node="exec $lockstep serve --cluster --quiet --etcd {etcd} --prefix {prefix} --init --members {members} --node-id {node} --advertise {advertise} --port {port} --leader-ttl-s 2"
# A job started by a non-interactive shell ignores SIGINT, and exec keeps
# that; python3 restores the default action before it starts the fuzzer.
python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$lockstep" fuzz --mode cluster --exec-node "$node" --nodes 3 --etcd-members 3 \
  --duration-s 120 --nemesis partition-clients,etcd-minority,clock-jump --nemesis-every-s 60 --skew-clocks \
  --clock-allowance-ms 100 >"$work/out" 2>&1 &
pid=$!

prefix=
for _ in $(seq 1 300); do
  # Six characters exactly: the pipeline's own command lines hold the
  # pattern, which pgrep also sees.
  prefix=$(pgrep -a -f -- "--prefix lockstep-$pid-" | grep -oE -- "--prefix lockstep-$pid-[A-Za-z0-9]{6}( |$)" | head -1 | cut -d' ' -f2)
  [ -n "$prefix" ] && break
  kill -0 "$pid" 2>/dev/null || fail "the fuzzer ended before starting its nodes"
  sleep 0.1
done
[ -n "$prefix" ] || fail "no node of the fuzzer running within 30 s"
nodes_folder=${TMPDIR:-/tmp}/lockstep-cluster-${prefix##*-}
[ -d "$nodes_folder" ] || fail "the nodes' folder $nodes_folder does not exist while the run goes on"
# Let the clients start, then read the etcd members' data folders.
sleep 3
etcd_folders=$(pgrep -a -f "initial-cluster-token lockstep-$pid-" | grep -oE -- '--data-dir /[^ ]+' | cut -d' ' -f2 | xargs -r -n1 dirname | sort -u)
[ -n "$etcd_folders" ] || fail "no etcd member of the fuzzer found running"

kill "-$signal" "$pid"
for _ in $(seq 1 100); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; fail "the fuzzer still ran 10 s after SIG$signal"; }
wait "$pid"
status=$?
[ "$status" -ne 0 ] || fail "the fuzzer exited 0 after SIG$signal, as if the run had ended"

sleep 0.5
left=$(pgrep -f -- "$prefix|initial-cluster-token lockstep-$pid-" || true)
[ -z "$left" ] || fail "processes left after SIG$signal: $(pgrep -a -f -- "$prefix|initial-cluster-token lockstep-$pid-")"
[ ! -e "$nodes_folder" ] || fail "the nodes' folder $nodes_folder is left after SIG$signal"
for folder in $etcd_folders; do
  [ ! -e "$folder" ] || fail "etcd's folder $folder is left after SIG$signal"
done
echo "SIG$signal: exit $status, no process and no folder left ($nodes_folder, $(echo $etcd_folders))"
