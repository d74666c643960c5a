#!/usr/bin/env bash
# Black-box fuzzing of our own cluster in real time: three `serve --cluster`
# nodes on three etcd members, all started by `fuzz --mode cluster`, with the
# nemesis killing, pausing and restarting a node every 5 s.
#   fuzz_cluster.sh LOCKSTEP EXPECT SECONDS SEED [BUG [NEMESIS [EVERY_S [OPTION...]]]]
# NEMESIS is --nemesis's list (kill,pause,restart unless given; none: no
# nemesis), EVERY_S its period (5 s unless given); the OPTIONs go to the
# fuzzer as they are
# (--nemesis-at-leader ...).
# EXPECT "no-false-alarm": one run of SECONDS of the correct cluster must
# conform (exit 0; 1 is a false alarm, 2 a checker that could not decide).
# EXPECT "decides": the same, and the kept history is read again by
# check-history, timed: the test prints how long the check took and its
# search figures (configurations stepped, at most alive at once).
# The fuzzer's clients and keys are 16 and 16 unless the OPTIONs give them.
# EXPECT "violation": serve --cluster --inject-bug BUG must be reported
# (exit 1; with LOCKSTEP_VIOLATION_MATCHING set, by a violation line that
# regex matches) within 120 s of fuzzing, by runs of SECONDS from seed SEED on
# (most bugs are caught by the first run; heap-not-rebuilt needs the nemesis
# to replace a leader and the stale heap to outlast the maximum lateness
# before the run ends: with 20 s runs it took 80 s of fuzzing once).
# Lateness fails a run only past --max-lateness-ms, 8 s here (a paused or
# killed leader is replaced after its TTL of 2 s and a campaign; the
# machine may be loaded): a run in which the machine ran the fuzzer half
# that late or more judged the machine, not the cluster; it is made again
# with the next seed, three runs at most, then the test reports itself
# skipped (77), never passed; such a run's violation does not count as a
# bug caught. Prints each run's verdict lines and how long it took.
set -uo pipefail
lockstep=$1 expect=$2 seconds=$3 seed=$4 bug=${5:-none} nemesis=${6:-kill,pause,restart} every_s=${7:-5}
shift $(($# < 7 ? $# : 7))
nemesis_options=(--nemesis "$nemesis" --nemesis-every-s "$every_s" "$@")
[ "$nemesis" = none ] && nemesis_options=("$@")
max_lateness_ms=8000
shape=()
[[ " $* " == *" --clients "* ]] || shape+=(--clients 16)
[[ " $* " == *" --keys "* ]] || shape+=(--keys 16)
source "$(dirname "$0")/machine_late.sh"
template="exec $lockstep serve --cluster --quiet --etcd {etcd} --prefix {prefix} --init --members {members} --node-id {node} --advertise {advertise} --port {port} --leader-ttl-s 2 --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms} --inject-bug $bug"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {
  local started=$SECONDS
  out=$("$lockstep" fuzz --mode cluster --exec-node "$template" --nodes 3 --etcd-members 3 \
        "${nemesis_options[@]}" --max-lateness-ms "$max_lateness_ms" \
        "${shape[@]}" --duration-s "$seconds" --seed "$1" --history "$work/run.ndjson" 2>&1)
  code=$?
  echo "$out" | grep '^clocks'
  echo "$out" | grep -v '^  ' | grep -v '^node n' | tail -12
  echo "seed $1: exit $code after $((SECONDS - started)) s"
}
# What a CI log needs to judge a false alarm without the history: every
# event of the owner the first violation (or undecided key) names, and the
# nemesis steps.
evidence() {
  local owner
  local first key
  first=$(echo "$out" | grep -m1 -E '^(violation \[key\]|unknown)')
  owner=$(echo "$first" | grep -o -m1 -E 'w[0-9]+-[0-9]+' | head -1)
  key=$(echo "$first" | grep -o -m1 -E 'key `[^`]+`' | head -1 | tr -d '`' | cut -d' ' -f2)
  [ -n "$owner" ] && [ -n "$key" ] || return 0
  echo "the history's events of $owner's connections about key $key, and the nemesis steps:"
  python3 - "$work/run.ndjson" "$owner" "$key" 2>/dev/null <<'PY' | head -200
import json, sys
_, path, owner, key = sys.argv
events = [json.loads(line) for line in open(path).read().splitlines()[1:]]
mine = {e["conn"] for e in events if "conn" in e and owner in e.get("line", "").split()}
for e in events:
    words = e.get("line", "").split()
    if e.get("ev") == "nemesis" or (e.get("conn") in mine and (not words or key in words)):
        print(f'{e.get("t_us", 0) / 1000:10.3f} ms  c{e.get("conn", "-")}  {e["ev"]}  {e.get("line", e.get("what", ""))}')
PY
}
case "$expect" in
  violation)
    fuzzed=0
    while [ "$fuzzed" -lt 120 ]; do
      run "$seed"
      late_ms=$(machine_late_ms)
      if [ "$code" -eq 1 ] && [ -n "$late_ms" ] && [ "$late_ms" -ge $((max_lateness_ms / 2)) ]; then
        echo "not counted: the machine ran the fuzzer $late_ms ms late, so the violation may be the machine's"
      elif [ "$code" -eq 1 ] && [ -n "${LOCKSTEP_VIOLATION_MATCHING:-}" ] &&
           ! echo "$out" | grep -qE "$LOCKSTEP_VIOLATION_MATCHING"; then
        echo "not counted: no violation of the kind asked for (matching $LOCKSTEP_VIOLATION_MATCHING)"
      elif [ "$code" -eq 1 ]; then
        echo "$bug caught after $((fuzzed + seconds)) s of fuzzing"; exit 0
      fi
      fuzzed=$((fuzzed + seconds)) seed=$((seed + 1))
    done
    echo "$bug not caught within 120 s of fuzzing (last exit $code)"; exit 1 ;;
  no-false-alarm|decides)
    for attempt in 1 2 3; do
      run "$seed"
      late_ms=$(machine_late_ms)
      if [ "$code" -ne 0 ] && [ -n "$late_ms" ] && [ "$late_ms" -ge $((max_lateness_ms / 2)) ]; then
        echo "inconclusive: the machine ran the fuzzer $late_ms ms late: too busy to judge lateness; again with seed $((seed + 1))"
        seed=$((seed + 1))
        continue
      fi
      [ "$code" -eq 2 ] && { echo "undecided: exit 2 on a correct cluster"; evidence; exit 1; }
      [ "$code" -eq 0 ] || { echo "false alarm: exit $code on a correct cluster"; evidence; exit 1; }
      echo "$out" | grep -q '^violations: 0$' || { echo "no 'violations: 0' line"; exit 1; }
      echo "$out" | grep -q 'nemesis steps' || { echo "no nemesis step reported"; exit 1; }
      if [ "$expect" = decides ]; then
        started_ns=$(date +%s%N)
        again=$("$lockstep" check-history --mode cluster "$work/run.ndjson" 2>&1) || { echo "check-history of the kept history: exit $?"; echo "$again" | tail -5; exit 1; }
        echo "check: check-history read the run's history again in $(( ($(date +%s%N) - started_ns) / 1000000 )) ms; $(echo "$again" | grep '^search:')"
      fi
      exit 0
    done
    echo "SKIPPED: three runs on a machine too busy to run the cluster on time"
    exit 77 ;;
esac
exit 1
