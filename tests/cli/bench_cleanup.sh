#!/usr/bin/env bash
# `bench server` starts lockstep serve and redis-server in process groups of
# their own, which a terminal's Ctrl-C does not reach. Stopped by SIGINT,
# then by SIGTERM, while both servers run, and run with a redis-server that
# exits at once, the bench must leave no process of its session behind.
# Each run is in a new session (its id is the leader's pid), so the check
# sees exactly what that run started.
#
# usage: bench_cleanup.sh LOCKSTEP WORK_DIR
set -uo pipefail
lockstep=$(realpath "$1") work=$(realpath -m "$2")
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The processes of session SID still running (zombies are gone already).
alive_in() { ps -o pid=,stat=,args= -s "$1" 2>/dev/null | awk '$2 !~ /^Z/'; }

wait_until_empty() {
  for _ in $(seq 1 60); do
    [ -z "$(alive_in "$1")" ] && return 0
    sleep 0.05
  done
  return 1
}

default_sigint='import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])'

# interrupt SIGNAL: start the bench for long runs, wait until both servers
# are running, send SIGNAL to the bench, and look at what is left.
interrupt() {
  local signal=$1 sid_file=$work/sid-$1
  # A background job of a script starts with SIGINT ignored, which the
  # bench then keeps (as it should under nohup); a terminal's foreground job
  # has it at its default, which python restores here before exec.
  setsid -w sh -c 'echo $$ > "$0"; exec "$@"' "$sid_file" python3 -c "$default_sigint" \
    "$lockstep" bench server --against redis --connections 2 --keys 10 --seconds 60 >"$work/$signal.out" 2>&1 &
  local runner=$!
  local sid=""
  for _ in $(seq 1 100); do
    sid=$(cat "$sid_file" 2>/dev/null)
    if [ -n "$sid" ] && [ "$(alive_in "$sid" | grep -c -e 'lockstep serve' -e 'redis-server')" -eq 2 ]; then break; fi
    sleep 0.05
  done
  [ -n "$sid" ] || { fail "$signal: the bench did not start"; return; }
  alive_in "$sid" | grep -q 'lockstep serve' || fail "$signal: lockstep serve was not running: $(cat "$work/$signal.out")"
  alive_in "$sid" | grep -q 'redis-server' || fail "$signal: redis-server was not running: $(cat "$work/$signal.out")"
  sleep 0.5  # into the measured run
  kill -s "$signal" "$sid"
  wait "$runner"
  if ! wait_until_empty "$sid"; then
    fail "$signal: left running after the bench was stopped: $(alive_in "$sid")"
    pkill -KILL -s "$sid"  # what this test started, by session id
  else
    echo "ok: stopped by SIG$signal, the bench left nothing running"
  fi
}

interrupt INT
interrupt TERM

# A redis-server that exits at once: the bench says so quickly (exit 2) and
# stops the lockstep server it had started.
printf '#!/bin/sh\necho "this redis-server exits at once" >&2\nexit 1\n' >"$work/broken-redis"
chmod +x "$work/broken-redis"
sid_file=$work/sid-broken
start=$(date +%s)
setsid -w sh -c 'echo $$ > "$0"; exec "$@"' "$sid_file" \
  "$lockstep" bench server --against redis --redis-server "$work/broken-redis" --seconds 1 >"$work/broken.out" 2>&1
code=$?
elapsed=$(( $(date +%s) - start ))
sid=$(cat "$sid_file")
[ "$code" -eq 2 ] || fail "a redis-server that exits: exit $code, expected 2: $(cat "$work/broken.out")"
grep -q "did not start" "$work/broken.out" || fail "a redis-server that exits: no reason given: $(cat "$work/broken.out")"
[ "$elapsed" -lt 8 ] || fail "a redis-server that exits: reported after $elapsed s"
wait_until_empty "$sid" || { fail "a redis-server that exits: left running: $(alive_in "$sid")"; pkill -KILL -s "$sid"; }

[ "$failures" -eq 0 ] && echo "ok: bench server leaves nothing running"
[ "$failures" -eq 0 ]
