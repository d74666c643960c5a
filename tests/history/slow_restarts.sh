#!/usr/bin/env bash
# Restarts of a server that dies slowly, started through a shell that did
# not `exec` it: the race a fuzzer loses when it takes the shell's exit for
# the server's, made to happen on every restart. other_server.py
# --shutdown-ms 200 goes on listening, accepting and answering for 200 ms
# after SIGTERM, then exits at once (resetting what it accepted); the
# template ends with `; exit $?`, so the shell is the group's leader and
# exits first on SIGTERM. The fuzzer restarts it every 2 s.
#
# It must conform (fuzz.sh no-false-alarm: a run the machine itself ran
# late is made again, and three such runs are a skip, 77), restart it at
# least twice, and its history must show that it waited for the old server:
# before each `down`, nothing was sent for at least the 200 ms the server
# took to die (the fuzzer sends nothing while it waits), and no connection
# is opened between a `down` and its `up`.
#
# usage: slow_restarts.sh LOCKSTEP WORK_DIR SECONDS SEED
set -uo pipefail
lockstep=$1 work=$2 seconds=$3 seed=$4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
history=$work/slow-restarts.ndjson
rm -f "$history"
out=$(OTHER_SERVER=$here/other_server.py OTHER_SERVER_OPTIONS="--timer-lag-ms 20 --shutdown-ms 200" \
      OTHER_SERVER_KEEP_SHELL=1 FUZZ_HISTORY=$history \
      "$here/fuzz.sh" "$lockstep" no-false-alarm "$seconds" "$seed" none 2 --tolerance-ms 100)
code=$?
echo "$out"
[ "$code" -eq 0 ] || exit "$code"
restarts=$(grep -c '"ev":"down"' "$history")
[ "$restarts" -ge 2 ] || { echo "FAIL: $restarts restarts in $seconds s, expected at least 2"; exit 1; }
python3 - "$history" <<'EOF'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])][1:]
last_send_us, down_us, failures = None, None, 0
for e in events:
    if e["ev"] == "send":
        last_send_us = e["t_us"]
    elif e["ev"] == "down":
        quiet_ms = (e["t_us"] - last_send_us) / 1000 if last_send_us is not None else None
        print(f"down at {e['t_us'] / 1000:.1f} ms: nothing sent for {quiet_ms:.1f} ms before it")
        if quiet_ms is None or quiet_ms < 200:
            print("FAIL: the fuzzer wrote `down` before the old server could have died (it dies 200 ms after SIGTERM)")
            failures += 1
        down_us = e["t_us"]
    elif e["ev"] == "up":
        print(f"up at {e['t_us'] / 1000:.1f} ms, {(e['t_us'] - down_us) / 1000:.1f} ms after the `down`")
        down_us = None
    elif e["ev"] == "connect" and down_us is not None:
        print(f"FAIL: connection {e['conn']} opened between a `down` and its `up`")
        failures += 1
sys.exit(1 if failures else 0)
EOF
