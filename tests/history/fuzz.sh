#!/usr/bin/env bash
# One black-box fuzzing run of our own server, started by the fuzzer.
#   fuzz.sh LOCKSTEP EXPECT SECONDS SEED [BUG] [RESTART_EVERY_S] [FUZZ_OPTION...]
# EXPECT is "violation": the bug must be reported (exit 1) within 30 s of
# fuzzing in all, by runs of SECONDS from seed SEED on (a run whose search
# ran out of budget, exit 2, decides nothing and the next seed runs, and so
# does a violation in a run the machine stalled, see below); or
# "no-false-alarm": one run of a correct server must conform (exit 0: exit 1
# is a false alarm, exit 2 a checker that could not decide). A run in which
# the fuzzer itself ran late by half the tolerance or more (its line
# `tester: the fuzzer itself ran at most X ms late`), or the target took as
# long to answer a release (`target: slowest answer to a release X ms`),
# judged a machine too busy to run the target on time: a violation there is
# the machine's, not the checker's nor the server's (and an `unknown` there
# comes of the burst of requests the stall piled up), and the run is made
# again with the next seed, three runs at most; if every run was stalled
# so, the test reports itself skipped (77), never passed.
set -uo pipefail
lockstep=$1 expect=$2 seconds=$3 seed=$4 bug=${5:-none} restart=${6:-0}
shift $(( $# < 6 ? $# : 6 ))
extra=("$@")
tolerance=50
for ((i = 0; i < ${#extra[@]}; i++)); do
  [ "${extra[$i]}" = "--tolerance-ms" ] && tolerance=${extra[$((i + 1))]}
done
limits="--port {port} --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --sweep-ms {sweep_ms} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms}"
# OTHER_SERVER names tests/history/other_server.py: the server under test is
# then that one (with its own bug switch), not ours. OTHER_SERVER_KEEP_SHELL
# ends its template with `; exit $?`, so that whatever /bin/sh is, the shell
# stays the group's leader and the server its child (no `exec`).
if [ -n "${OTHER_SERVER:-}" ]; then
  template="python3 $OTHER_SERVER $limits --bug $bug ${OTHER_SERVER_OPTIONS:-}"
  [ -n "${OTHER_SERVER_KEEP_SHELL:-}" ] && template="$template; exit \$?"
else
  template="$lockstep serve --quiet $limits --state-file {state_file} --inject-bug $bug"
fi
# FUZZ_HISTORY: where the last run writes its history.
[ -n "${FUZZ_HISTORY:-}" ] && extra+=(--history "$FUZZ_HISTORY")
# machine_late_ms: how late the machine let the last run ($out) run.
source "$(dirname "$0")/machine_late.sh"
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
      late_ms=$(machine_late_ms)
      if [ "$code" -eq 1 ] && [ -n "$late_ms" ] && [ "$late_ms" -ge $((tolerance / 2)) ]; then
        echo "not counted: the machine ran the fuzzer or the target $late_ms ms late, so the violation may be the machine's"
      elif [ "$code" -eq 1 ]; then
        echo "caught after $((fuzzed + seconds)) s of fuzzing"; exit 0
      fi
      fuzzed=$((fuzzed + seconds)) seed=$((seed + 1))
    done
    echo "not caught within 30 s of fuzzing (last exit $code)"; exit 1 ;;
  no-false-alarm)
    for attempt in 1 2 3; do
      run "$seed"
      late_ms=$(machine_late_ms)
      if [ "$code" -ne 0 ] && [ -n "$late_ms" ] && [ "$late_ms" -ge $((tolerance / 2)) ]; then
        echo "inconclusive: the machine ran the fuzzer or the target $late_ms ms late (tolerance $tolerance ms): too busy to judge lateness; again with seed $((seed + 1))"
        seed=$((seed + 1))
        continue
      fi
      [ "$code" -eq 2 ] && { echo "undecided: exit 2 on a correct server"; exit 1; }
      [ "$code" -eq 0 ] || { echo "false alarm: exit $code on a correct server"; exit 1; }
      echo "$out" | grep -q '^violations: 0$' || { echo "no 'violations: 0' line"; exit 1; }
      exit 0
    done
    echo "SKIPPED: three runs on a machine too busy to run the target on time"
    exit 77 ;;
esac
exit 0
