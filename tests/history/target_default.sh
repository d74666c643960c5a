#!/usr/bin/env bash
# What a newcomer tries first: `lockstep serve --port P`, then
# `lockstep fuzz --target 127.0.0.1:P` without a limit option. The fuzzer
# must assume the protocol's defaults (what the server started without
# options has), say so, and the run must conform (exit 0, violations: 0).
# usage: target_default.sh LOCKSTEP SECONDS WORK_DIR
set -uo pipefail
lockstep=$1 seconds=$2 work_dir=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work_dir" && mkdir -p "$work_dir"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$lockstep" serve --quiet --port "$port" >"$work_dir/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
  sleep 0.1
done
"$lockstep" fuzz --target "127.0.0.1:$port" --duration-s "$seconds" --history "$work_dir/history.ndjson" >"$work_dir/fuzz.out" 2>&1
status=$?
grep -v '^  ' "$work_dir/fuzz.out" | grep -E '^(fuzz|run|history|limits|search|sweep|verdict|violations|violation|unknown)' | cut -c1-300
grep -q "limits assumed (the protocol's defaults, docs/protocol.md" "$work_dir/fuzz.out" || fail "the fuzzer did not say it assumed the protocol's defaults"
grep -q 'max_keys 1000000, max_waiters_per_key 1024, max_waiters 1000000, sweep_ms 5000, max_lease_ms 86400000, max_wait_ms 86400000, max_line_bytes 1024' "$work_dir/fuzz.out" \
  || fail "the limits assumed are not the protocol's defaults"
[ $status -eq 0 ] || fail "fuzz --target of lockstep serve without options exited $status (1: a false alarm, 2: undecided)"
grep -q '^violations: 0$' "$work_dir/fuzz.out" || fail "no 'violations: 0' line"
echo ok
