#!/usr/bin/env bash
# `fuzz` against a live server with the LIFO hand-off bug must not pass
# (exit 1, or 2 when this machine's timing left the search undecided) and
# must write the history, JUnit XML and the HTML report; `check-history` of
# that history must reach the same verdict (the same exit code). The JUnit
# of a known broken run (the checked-in history) has at least one failure.
#
# A small workload (4 clients, 2 keys) and a bounded search keep the check
# to seconds: with the default 16 clients and budget it takes minutes. A
# violation on one key makes the verdict a violation (exit 1) even when the
# budget runs out on another, so the bound does not hide the bug.
#
# usage: fuzz_junit_html.sh LOCKSTEP WORK_DIR BROKEN_HISTORY
set -uo pipefail
lockstep=$1 work_dir=$2 broken=$3
here=$(dirname "$0")
rm -rf "$work_dir" && mkdir -p "$work_dir"
fail() { echo "FAIL: $*"; exit 1; }

serve="$lockstep serve --quiet --port {port} --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --sweep-ms {sweep_ms} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms} --state-file {state_file}"
history=$work_dir/history.ndjson junit=$work_dir/fuzz.xml report=$work_dir/report.html
"$lockstep" fuzz --exec "$serve --inject-bug lifo-handoff" --duration-s 8 --seed 1 --clients 4 --keys 2 --budget-states 1000000 \
  --junit "$junit" --report "$report" --history "$history" >"$work_dir/fuzz.out"
status=$?
grep -E '^(fuzz|run|history|search|verdict|violations|violation \[[a-z]+\]|unknown):' "$work_dir/fuzz.out" | cut -c1-240
[ $status -eq 1 ] || [ $status -eq 2 ] || fail "fuzz against lifo-handoff exited $status, expected 1 (or 2: undecided)"
for file in "$history" "$junit" "$report"; do [ -s "$file" ] || fail "$file not written"; done
python3 "$here/junit_check.py" "$junit" || fail "$junit"
if [ $status -eq 1 ]; then
  python3 "$here/junit_check.py" "$junit" --expect 'failures>=1' || fail "$junit"
  grep -q "id='verdict'>violation<" "$report" || fail "the report's verdict is not violation"
fi

"$lockstep" check-history "$history" --budget-states 1000000 --junit "$work_dir/check.xml" >"$work_dir/check.out"
again=$?
grep -E '^(verdict|violations):' "$work_dir/check.out"
[ $again -eq $status ] || fail "check-history exited $again, fuzz exited $status"
python3 "$here/junit_check.py" "$work_dir/check.xml" || fail "check.xml"

"$lockstep" check-history "$broken" --junit "$work_dir/broken.xml" >"$work_dir/broken.out"
[ $? -eq 1 ] || fail "check-history of the checked-in LIFO run did not report a violation"
python3 "$here/junit_check.py" "$work_dir/broken.xml" --expect 'failures>=1' || fail "broken.xml"
echo "ok"
