#!/usr/bin/env bash
# The worked example of docs/testing-other-lock-services.md, its command
# read from the block under <!-- etcd-lock-fuzz --> and run as written there
# (with this build's binaries, in a work folder): etcd's own lock behind lockstep-etcd-lock, fuzzed with
# `lockstep fuzz --mode cluster`, which starts the etcd members (free
# loopback ports, temporary data directories) and the adapter from its
# command template, and stops them on every path. The document states the
# verdict, and this checks it:
# - the run ends with exit 1 and exactly one violation, of the tokens check
#   ("a later grant carries a smaller token"): a waiter's token is the create
#   revision it queued at, below a grant made meanwhile on another key; no
#   key is undecided, and the verdict is never `unknown`;
# - each key's own history (tests/adapters/history_by_key.py), which has no
#   cross-key token order to break, conforms, and its worst lateness is
#   printed (etcd's lessor ends leases late, never early);
# - nothing the run started is left running.
# Skipped (exit 77) without etcd, which scripts/setup.sh installs.
# usage: etcd_lock_fuzz.sh LOCKSTEP ADAPTER DOCUMENT WORK_DIR
set -uo pipefail
lockstep=$1 adapter=$2 doc=$3 work_dir=$4
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
if ! command -v etcd >/dev/null; then
  echo "SKIP: etcd is not installed (Debian's etcd-server; scripts/setup.sh installs it)"
  exit 77
fi
rm -rf "$work_dir" && mkdir -p "$work_dir" && cd "$work_dir" || exit 1

# The document's command, continuations joined, with this build's binaries
# for build/default/ (both are built into one folder).
[ "$(dirname "$lockstep")" = "$(dirname "$adapter")" ] || fail "lockstep and the adapter are in different folders"
command=$(awk '$0 == "<!-- etcd-lock-fuzz -->" { found = 1; next }
  found && /^```/ { if (inside) exit; inside = 1; next }
  inside { print }' "$doc" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
[[ $command == "build/default/lockstep fuzz --mode cluster "* ]] || fail "no fuzz command under <!-- etcd-lock-fuzz --> in $doc"
history=$(sed -n 's/.* --history \([^ ]*\).*/\1/p' <<<"$command")
[ -n "$history" ] || fail "the document's command records no history"
eval "${command//build\/default\//$(dirname "$lockstep")/}" >"$work_dir/fuzz.out" 2>&1
status=$?
grep -E '^(fuzz|node|run|search|worst|unknown|verdict|violation)' "$work_dir/fuzz.out" | cut -c1-400

# Nothing started for the run is left: the adapter's command and the etcd
# members it named.
command_line=$(sed -n 's/^node n1: //p' "$work_dir/fuzz.out")
[ -n "$command_line" ] || fail "the fuzzer did not name the node it started"
etcd_ports=$(echo "$command_line" | sed -n 's/.*--etcd \([^ ]*\).*/\1/p' | tr ',' '\n' | sed 's/.*://')
sleep 0.5
pgrep -f -x "$command_line" >/dev/null && fail "the adapter is still running after the run"
for port in $etcd_ports; do
  pgrep -f "etcd .*127.0.0.1:$port" >/dev/null && fail "an etcd member on port $port is still running after the run"
done

[ $status -ne 2 ] || fail "the verdict is unknown (exit 2), which the document does not state"
[ $status -eq 1 ] || fail "fuzz exited $status; the document states a violation (exit 1)"
grep -q '^verdict: violation$' "$work_dir/fuzz.out" || fail "no 'verdict: violation' line"
grep -q '^violations: 1$' "$work_dir/fuzz.out" || fail "not exactly one violation"
grep -q '^violation \[tokens\]: .*a later grant carries a smaller token' "$work_dir/fuzz.out" \
  || fail "the violation is not the tokens check's"
grep -q '^unknown:' "$work_dir/fuzz.out" && fail "a key was left undecided"

python3 "$here/history_by_key.py" "$work_dir/$history" "$work_dir/keys" >"$work_dir/keys.txt" \
  || fail "the history could not be split by key"
[ -s "$work_dir/keys.txt" ] || fail "the history names no key"
while read -r file key; do
  "$lockstep" check-history "$file" >"$file.out" 2>&1
  key_status=$?
  echo "key $key alone: $(grep -E '^verdict' "$file.out"); $(grep -E '^worst lateness' "$file.out" | cut -c1-160)"
  [ $key_status -eq 0 ] || { cat "$file.out"; fail "key $key's own history does not conform (exit $key_status)"; }
done <"$work_dir/keys.txt"
echo ok
