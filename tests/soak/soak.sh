#!/usr/bin/env bash
# A soak: one long fuzzing run of our own service, as a user would make it
# for longer than the CTest runs do, which must conform and must not leak.
#   soak.sh LOCKSTEP cluster SEED SECONDS
#     `fuzz --mode cluster` on three `serve --cluster` nodes and three etcd
#     members, with every fault the nemesis knows (`--nemesis all`, so a new
#     kind joins the soak by its name) on the nodes and the etcd members,
#     every 4 s, and a maximum lateness of 8 s (the leader TTL is 2 s);
#   soak.sh LOCKSTEP simple SEED SECONDS
#     `fuzz --exec` on `serve`, restarted every 30 s.
# Passes when the run conforms (exit 0, `violations: 0`), every fault kind
# the run names acted at least once, every process it started has its
# resource figures printed, and no node's (or the server's) largest resident
# memory in the run's last minute is more than twice its largest in the
# second minute (a table or a buffer that grows without bound). A run the
# machine itself ran half the maximum lateness (cluster) or half the
# tolerance (simple) late judged the machine: reported skipped (77), never
# passed. Prints the run's summary, its resource lines and its time.
set -uo pipefail
lockstep=$1 mode=$2 seed=$3 seconds=$4
growth_max=2
started=$SECONDS
case "$mode" in
  cluster)
    late_max_ms=8000
    node="exec $lockstep serve --cluster --quiet --etcd {etcd} --prefix {prefix} --init --members {members} --node-id {node} --advertise {advertise} --port {port} --leader-ttl-s 2 --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms}"
    out=$("$lockstep" fuzz --mode cluster --exec-node "$node" --nodes 3 --etcd-members 3 --nemesis all --nemesis-etcd \
          --nemesis-every-s 4 --max-lateness-ms "$late_max_ms" --duration-s "$seconds" --seed "$seed" 2>&1)
    code=$?
    watched="n[0-9]+" ;;
  simple)
    late_max_ms=100
    server="exec $lockstep serve --quiet --port {port} --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --sweep-ms {sweep_ms} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms} --state-file {state_file}"
    out=$("$lockstep" fuzz --exec "$server" --restart-every-s 30 --tolerance-ms "$late_max_ms" --duration-s "$seconds" \
          --seed "$seed" 2>&1)
    code=$?
    watched="server" ;;
  *) echo "usage: soak.sh LOCKSTEP cluster|simple SEED SECONDS"; exit 2 ;;
esac
echo "$out" | grep -Ev '^(node n|  )' | tail -25
echo "soak $mode, seed $seed, $seconds s: exit $code after $((SECONDS - started)) s"
source "$(dirname "$0")/../history/machine_late.sh"
late_ms=$(machine_late_ms)
if [ "$code" -ne 0 ] && [ -n "$late_ms" ] && [ "$late_ms" -ge $((late_max_ms / 2)) ]; then
  echo "SKIPPED: the machine ran the fuzzer $late_ms ms late, too busy to judge a real-time run"
  exit 77
fi
failed=0
fail() { echo "FAIL: $*"; failed=1; }
[ "$code" -eq 0 ] || fail "exit $code on a correct service"
echo "$out" | grep -q '^violations: 0$' || fail "no 'violations: 0' line"
if [ "$mode" = cluster ]; then
  # Every fault of the plan (`--nemesis all`: every kind the nemesis knows)
  # acted at least once, on a node or an etcd member.
  kinds=$(echo "$out" | sed -n 's/.*, nemesis \([a-z,-]*\) every .*/\1/p' | tr ',' ' ')
  [ -n "$kinds" ] || fail "the plan names no nemesis fault"
  faults=$(echo "$out" | grep '^nemesis: faults on nodes')
  for kind in $kinds; do
    [[ "$faults" =~ [0-9]+\ $kind ]] || fail "the nemesis never did $kind: $faults"
  done
fi
echo "$out" | grep -q '^resources: fuzzer peak ' || fail "no resource figures for the fuzzer"
lines=$(echo "$out" | grep -E "^resources: ($watched) peak ")
[ -n "$lines" ] || fail "no resource figures for $watched"
while read -r line; do
  [ -n "$line" ] || continue
  growth=$(echo "$line" | sed -n 's/.*in the last (x\([0-9.]*\))$/\1/p')
  if [ -z "$growth" ]; then
    [ "$seconds" -lt 180 ] || fail "no memory growth figure in: $line"
  elif awk -v g="$growth" -v m="$growth_max" 'BEGIN { exit !(g > m) }'; then
    fail "memory grew more than ${growth_max}x after the first minute: $line"
  fi
done <<<"$lines"
exit $failed
