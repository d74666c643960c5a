#!/usr/bin/env bash
# `sim --validate-trace` stopped by SIGTERM or SIGINT while TLC runs: java
# must be gone and the temporary folders (the trace's, TLC's work) removed,
# as after a normal exit, which is checked first.
#
# usage: signal_during_tlc.sh LOCKSTEP SIGNAL
set -uo pipefail
source "$(dirname "$0")/../require_tlc.sh"
lockstep=$1 signal=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; head -20 "$work/out" 2>/dev/null; exit 1; }
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"

"$lockstep" sim --seed 3 --validate-trace >"$work/out" 2>&1 || fail "the run itself did not pass"
[ -z "$(ls -A "$TMPDIR")" ] || fail "a normal exit left $(ls "$TMPDIR") in TMPDIR"

# A job started by a non-interactive shell ignores SIGINT, and exec keeps
# that; python3 restores the default action before it starts lockstep.
python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$lockstep" sim --seed 3 --validate-trace >"$work/out" 2>&1 &
pid=$!
# TLC's java names its work folder (under our TMPDIR) on its command line.
java_pid=
for _ in $(seq 1 600); do
  java_pid=$(pgrep -f -- "-Djava.io.tmpdir=$TMPDIR/" | head -1)
  [ -n "$java_pid" ] && break
  kill -0 "$pid" 2>/dev/null || fail "lockstep ended before TLC started"
  sleep 0.05
done
[ -n "$java_pid" ] || fail "TLC did not start within 30 s"
sleep 0.5
kill "-$signal" "$pid"
for _ in $(seq 1 100); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; fail "lockstep still ran 10 s after SIG$signal"; }
wait "$pid"
status=$?
for _ in $(seq 1 30); do
  kill -0 "$java_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$java_pid" 2>/dev/null && { kill -KILL "$java_pid"; fail "TLC's java (pid $java_pid) outlived lockstep"; }
[ -z "$(ls -A "$TMPDIR")" ] || fail "SIG$signal left $(ls "$TMPDIR") in TMPDIR"
echo "PASS: SIG$signal during TLC (exit $status): java gone, no folder left"
