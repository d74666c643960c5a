#!/usr/bin/env bash
# Many short black-box fuzzing runs of our own (correct) server while two
# busy loops load the cores: a checker that is fair to real servers reports
# no violation and no `unknown` in any of them. CTest runs a short version;
# run it by hand for the long one:
#   tests/history/stress.sh build/default/lockstep 100 2 1 /tmp/stress --tolerance-ms 250
# usage: stress.sh LOCKSTEP RUNS SECONDS FIRST_SEED WORK_DIR [FUZZ_OPTION...]
# A loaded machine delays the server's timers by as long as the scheduler
# leaves it waiting: --tolerance-ms must cover that (docs/testing.md). For
# every run the longest time the server answered nothing while a release
# waited for its answer is measured (stalls.py): a run that does not conform
# is shown with it, so a stalled server is told from a checker's mistake.
# Every run's output and the history of each run that did not conform are
# kept in WORK_DIR. The last line is `stress: R runs, V violations,
# U unknown` (exit 0 only when V and U are 0).
set -uo pipefail
lockstep=$1 runs=$2 seconds=$3 first_seed=$4 work_dir=$5
shift 5
extra=("$@")
rm -rf "$work_dir" && mkdir -p "$work_dir"

busy=()
stop_busy() { for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null; done; wait 2>/dev/null; }
trap stop_busy EXIT
for _ in 1 2; do
  ( while :; do :; done ) &
  busy+=($!)
done

here=$(cd "$(dirname "$0")" && pwd)
serve="$lockstep serve --quiet --port {port} --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --sweep-ms {sweep_ms} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms} --state-file {state_file}"
echo "stress: $runs runs of $seconds s on $(nproc) cores with ${#busy[@]} busy loops; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
violations=0 unknown=0 started=$SECONDS worst=0 worst_seed=0
for ((i = 0; i < runs; i++)); do
  seed=$((first_seed + i))
  out=$work_dir/run-$seed.out history=$work_dir/run-$seed.ndjson
  "$lockstep" fuzz --exec "$serve" --duration-s "$seconds" --seed "$seed" --history "$history" "${extra[@]}" >"$out" 2>&1
  code=$?
  silence=$(python3 "$here/stalls.py" "$history" 2>/dev/null)
  silence_ms=$(echo "$silence" | sed -n 's/.*: \([0-9]*\)\.[0-9]* ms.*/\1/p')
  if [ -n "$silence_ms" ] && [ "$silence_ms" -gt "$worst" ]; then worst=$silence_ms worst_seed=$seed; fi
  case $code in
    0) rm -f "$history" ;;
    1) violations=$((violations + 1))
       echo "seed $seed: violation; $silence"; grep -E '^(violation \[|tester:|target:)' "$out" | head -5 | cut -c1-240 ;;
    *) unknown=$((unknown + 1))
       echo "seed $seed: exit $code; $silence"; grep -E '^(unknown|tester:|target:)' "$out" | head -4 | cut -c1-240 ;;
  esac
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); $((SECONDS - started)) s in all"
echo "the longest silence of the server with a release unanswered: $worst ms (seed $worst_seed)"
echo "stress: $runs runs, $violations violations, $unknown unknown"
[ "$violations" -eq 0 ] && [ "$unknown" -eq 0 ]
