#!/usr/bin/env bash
# One black-box fuzzing run of our own server, started by the fuzzer.
#   fuzz.sh LOCKSTEP EXPECT SECONDS SEED [BUG] [RESTART_EVERY_S] [FUZZ_OPTION...]
# EXPECT is "violation": the bug must be reported (exit 1) within 30 s of
# fuzzing in all, by runs of SECONDS from seed SEED on (a run whose search
# ran out of budget, exit 2, decides nothing and the next seed runs); or
# "no-false-alarm": one run of a correct server must conform (exit 0: exit 1
# is a false alarm, exit 2 a checker that could not decide).
set -uo pipefail
lockstep=$1 expect=$2 seconds=$3 seed=$4 bug=${5:-none} restart=${6:-0}
shift $(( $# < 6 ? $# : 6 ))
extra=("$@")
limits="--port {port} --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --sweep-ms {sweep_ms} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms}"
# OTHER_SERVER names tests/history/other_server.py: the server under test is
# then that one (with its own bug switch), not ours.
if [ -n "${OTHER_SERVER:-}" ]; then
  template="python3 $OTHER_SERVER $limits --bug $bug ${OTHER_SERVER_OPTIONS:-}"
else
  template="$lockstep serve --quiet $limits --state-file {state_file} --inject-bug $bug"
fi
run() {
  out=$("$lockstep" fuzz --exec "$template" --duration-s "$seconds" --seed "$1" --restart-every-s "$restart" \
        --budget-states 3000000 "${extra[@]}" 2>&1)
  code=$?
  echo "$out" | grep -v '^  ' | tail -12
}
case "$expect" in
  violation)
    fuzzed=0
    while [ "$fuzzed" -lt 30 ]; do
      run "$seed"
      [ "$code" -eq 1 ] && { echo "caught after $((fuzzed + seconds)) s of fuzzing"; exit 0; }
      fuzzed=$((fuzzed + seconds)) seed=$((seed + 1))
    done
    echo "not caught within 30 s of fuzzing (last exit $code)"; exit 1 ;;
  no-false-alarm)
    run "$seed"
    [ "$code" -eq 2 ] && { echo "undecided: exit 2 on a correct server"; exit 1; }
    [ "$code" -eq 0 ] || { echo "false alarm: exit $code on a correct server"; exit 1; }
    echo "$out" | grep -q '^violations: 0$' || { echo "no 'violations: 0' line"; exit 1; } ;;
esac
exit 0
