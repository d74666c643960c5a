# Sourced by the real-time fuzzing tests (fuzz.sh, fuzz_cluster.sh).
# machine_late_ms: how late the machine let the last run (its output in
# $out) run: the fuzzer's own lateness (`tester: the fuzzer itself ran at
# most X ms late`, printed in both modes), or the slowest answer to a
# release (`target: slowest answer to a release X ms`, simple mode: a
# server that runs answers it at once), whichever is larger; empty if
# neither was printed.
machine_late_ms() {
  local tester target
  tester=$(echo "$out" | sed -n 's/^tester: the fuzzer itself ran at most \([0-9]*\)\.[0-9]* ms late.*/\1/p')
  target=$(echo "$out" | sed -n 's/^target: slowest answer to a release \([0-9]*\)\.[0-9]* ms.*/\1/p')
  [ -n "$tester$target" ] && echo $(( ${tester:-0} > ${target:-0} ? ${tester:-0} : ${target:-0} ))
}
