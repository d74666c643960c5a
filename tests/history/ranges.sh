#!/usr/bin/env bash
# The workload keeps to what it is told. `fuzz --lease-ms 1000..5000
# --wait-ms 0..3000` against our server: every acquire the recorded history
# sends that is well-formed under the limits assumed has its lease in
# 1000..5000 and its wait in 0..3000 (try-locks and waits both present), and
# the run conforms. `--no-limits`: no line past max_line_bytes and no lease
# past max_lease_ms is sent, no `B` comes back, and the run conforms.
# usage: ranges.sh LOCKSTEP SECONDS WORK_DIR
set -uo pipefail
lockstep=$1 seconds=$2 work_dir=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work_dir" && mkdir -p "$work_dir"
serve="$lockstep serve --quiet --port {port} --max-keys {max_keys} --max-waiters-per-key {max_waiters_per_key} --max-waiters {max_waiters} --sweep-ms {sweep_ms} --max-lease-ms {max_lease_ms} --max-wait-ms {max_wait_ms} --state-file {state_file}"

"$lockstep" fuzz --exec "$serve" --duration-s "$seconds" --lease-ms 1000..5000 --wait-ms 0..3000 \
  --history "$work_dir/ranges.ndjson" >"$work_dir/ranges.out" 2>&1
status=$?
grep -E '^(fuzz|verdict|violations)' "$work_dir/ranges.out" | cut -c1-200
[ $status -eq 0 ] || fail "fuzz with --lease-ms and --wait-ms exited $status"
python3 - "$work_dir/ranges.ndjson" 1000 5000 0 3000 <<'PY' || fail "a lease or wait out of range"
import json, sys
path, lease_low, lease_high, wait_low, wait_high = sys.argv[1], *map(int, sys.argv[2:])
lines = open(path).read().splitlines()
limits = json.loads(lines[0])["limits"]
acquires = bad = waits = trylocks = 0
for text in lines[1:]:
    event = json.loads(text)
    if event["ev"] != "send":
        continue
    fields = event["line"].split(" ")
    if len(fields) != 5 or fields[0] != "A" or not fields[3].isdigit() or not fields[4].isdigit():
        continue
    lease, wait = int(fields[3]), int(fields[4])
    if not (1 <= lease <= limits["max_lease_ms"] and wait <= limits["max_wait_ms"]):
        continue  # malformed under the limits on purpose (a lease past the maximum)
    acquires += 1
    waits += wait > 0
    trylocks += wait == 0
    if not (lease_low <= lease <= lease_high and wait_low <= wait <= wait_high):
        bad += 1
        print(f"out of range: {event['line']}")
print(f"{acquires} acquires: {waits} with a wait, {trylocks} try-locks, {bad} out of range")
sys.exit(0 if acquires > 0 and waits > 0 and trylocks > 0 and bad == 0 else 1)
PY

"$lockstep" fuzz --exec "$serve" --duration-s "$seconds" --no-limits --history "$work_dir/none.ndjson" \
  >"$work_dir/none.out" 2>&1
status=$?
grep -E '^(fuzz|verdict|violations)' "$work_dir/none.out" | cut -c1-200
[ $status -eq 0 ] || fail "fuzz --no-limits exited $status"
python3 - "$work_dir/none.ndjson" <<'PY' || fail "--no-limits reached a limit"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
limits = json.loads(lines[0])["limits"]
long_lines = past_lease = busy = 0
for text in lines[1:]:
    event = json.loads(text)
    line = event.get("line", "")
    if event["ev"] == "send":
        long_lines += len(line) > 1024
        fields = line.split(" ")
        past_lease += len(fields) == 5 and fields[0] == "A" and fields[3].isdigit() and int(fields[3]) > 86_400_000
    if event["ev"] == "recv":
        busy += line.startswith("B ")
print(f"--no-limits: {long_lines} over-long lines, {past_lease} leases past the maximum, {busy} B received")
sys.exit(0 if long_lines == past_lease == busy == 0 else 1)
PY
echo ok
