#!/usr/bin/env bash
# The checker's budgets hold on histories made to explode it: many clients
# ask for a held key with long waits and nothing is ever answered. Watched
# for 4 s, the waiters' `T`s were owed (a violation); watched for 2.5 s,
# which waiters were queued, and when, stays open and the search must stop
# at its budget. Either way check-history must end (well within the
# timeout), stay within its memory budget (the process runs under a virtual
# memory limit far below what an unbounded search takes) and must not pass:
# exit 1 (a violation) or 2 (unknown).
# Under AddressSanitizer the virtual memory limit cannot be set (the
# sanitizer reserves terabytes of address space at start and aborts below
# that), so a sanitized build passes `sanitized` and only the ending and the
# verdict are checked; the release pass holds the memory limit.
# usage: budget.sh LOCKSTEP WORK_DIR [sanitized]
set -uo pipefail
lockstep=$1 work_dir=$2 build=${3:-plain}
vm_limit_kb=3000000
[ "$build" = sanitized ] && vm_limit_kb=unlimited
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work_dir" && mkdir -p "$work_dir"
for case in "20 4000000" "60 4000000" "20 2500000" "60 2500000"; do
  set -- $case
  clients=$1 end_us=$2
  history=$work_dir/crowd-$clients-$end_us.ndjson
  python3 - "$clients" "$end_us" >"$history" <<'PY'
import json, sys
clients, end_us = int(sys.argv[1]), int(sys.argv[2])
out = [{"schema": "lockstep.history/1", "tolerance_ms": 50,
        "limits": {"max_keys": 6, "max_waiters_per_key": 1024, "max_waiters": 100000, "sweep_ms": 1000}}]
out.append({"t_us": 0, "ev": "connect", "conn": 1})
out.append({"t_us": 1000, "ev": "send", "conn": 1, "line": "A k holder 60000 0"})
out.append({"t_us": 1100, "ev": "recv", "conn": 1, "line": "A 1 holder k"})
t = 2000
for conn in range(2, clients + 2):
    out.append({"t_us": t, "ev": "connect", "conn": conn})
    for n in range(3):
        t += 150
        out.append({"t_us": t, "ev": "send", "conn": conn, "line": f"A k c{conn}o{n} 5000 3000"})
for conn in range(1, clients + 2):
    out.append({"t_us": end_us, "ev": "close", "conn": conn})
print("\n".join(json.dumps(e) for e in out))
PY
  started=$SECONDS
  out=$work_dir/crowd-$clients-$end_us.out
  ( ulimit -v $vm_limit_kb; timeout 300 "$lockstep" check-history "$history" --budget-memory-mb 256 >"$out" 2>&1 )
  status=$?
  grep -E '^(search|verdict)' "$out" | cut -c1-200
  echo "$clients clients watched for $((end_us / 1000)) ms: exit $status after $((SECONDS - started)) s"
  [ $status -ne 124 ] || fail "check-history did not end within 300 s"
  [ $status -eq 1 ] || [ $status -eq 2 ] || fail "exit $status: expected 1 or 2 (a crash or a pass is wrong)"
done
echo ok
