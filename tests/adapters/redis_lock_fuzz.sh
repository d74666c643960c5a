#!/usr/bin/env bash
# The worked example of docs/testing-other-lock-services.md, "Worked
# example: the single-instance Redis lock", its commands as written there
# (with this build's binaries, and a free port for Redis's 6390 and the
# adapter's 7880), and the verdicts the document states:
# - the recipe as it is (random values as tokens): exit 1, the tokens check
#   fails ("a later grant carries a smaller token") and so do keys, on their
#   tokens ("its token is not the key's next one"); never `unknown`;
# - with `--tokens counter --poll-ms 500`: no tokens violation is left, and
#   keys fail on waiters passed by other requests (Redis keeps no queue):
#   exit 1, every violation a key's, none about a token out of order (one
#   may name the key's next token as a smaller one, issued first to the
#   request that passed the waiter: the document says so);
# - with `--tokens counter --wait notify`: no tokens violation, and keys
#   fail on waiters passed by other requests (an event wakes every waiter
#   at once, and the first `SET` wins): exit 1, every violation a key's;
# - the adapter on its own answers the document's request with a grant;
# - nothing the runs started is left running.
# Skipped (exit 77) without redis-server, which scripts/setup.sh installs.
# usage: redis_lock_fuzz.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -uo pipefail
build_dir=$1 source_dir=$2 work=$3
doc=$source_dir/docs/testing-other-lock-services.md
fail() { echo "FAIL: $*"; exit 1; }
command -v redis-server >/dev/null || { echo "SKIP: redis-server is not installed (scripts/setup.sh installs it)"; exit 77; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
started=()
trap 'for pid in "${started[@]}"; do kill "$pid" 2>/dev/null; done' EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }

# The logical lines of the block under `<!-- NAME -->`, continuations joined.
block() {
  awk -v marker="<!-- $1 -->" '$0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$doc" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta'
}
localize() {  # LINE REDIS_PORT [ADAPTER_PORT]
  local line=${1//build\/default\//$build_dir\/}
  line=${line//6390/$2}
  [ -n "${3:-}" ] && line=${line//7880/$3}
  printf '%s\n' "$line"
}
start_redis() {  # the first block's redis-server line, in the background, on PORT
  local line
  line=$(localize "$(block redis-lock-fuzz | grep '^redis-server ')" "$1")
  [[ $line == *' &' ]] || fail "the document's redis-server line does not end in &"
  eval "exec ${line% &}" >"redis-$1.log" 2>&1 &
  started+=($!)
  wait_port "$1" || fail "redis-server did not listen on $1: $(tail -3 "redis-$1.log")"
}

# run NAME: one fuzz block of the document on a Redis of its own.
run() {
  local name=$1 port
  port=$(free_port)
  start_redis "$port"
  local fuzz
  fuzz=$(block "$name" | grep '^build/default/lockstep fuzz ')
  [ -n "$fuzz" ] || fail "no fuzz command under <!-- $name -->"
  eval "$(localize "$fuzz" "$port")" >"$name.out" 2>&1
  status=$?
  out=$name.out
  kill "${started[-1]}"
  echo "== $name: exit $status"
  grep -E '^(run|search|worst|unknown|verdict|violation)' "$out" | cut -c1-300
  [ $status -ne 2 ] || fail "$name: the verdict is unknown (exit 2), which the document does not state"
  grep -q '^unknown:' "$out" && fail "$name: a key was left undecided"
  command_line=$(sed -n 's/^node n1: //p' "$out")
  [ -n "$command_line" ] || fail "$name: the fuzzer did not name the adapter it started"
  sleep 0.3
  pgrep -f -x "$command_line" >/dev/null && fail "$name: the adapter is still running after the run"
  return 0
}

run redis-lock-fuzz
[ $status -eq 1 ] || fail "the recipe: exit $status, the document states violations"
grep -q '^violation \[tokens\]: .*a later grant carries a smaller token' "$out" || fail "the recipe: no tokens violation"
grep -q "^violation \[key\]: .*its token is not the key's next one" "$out" || fail "the recipe: no key fails on its tokens"

# Tokens from the counter: no tokens violation, and every violation a key's.
only_key_violations() {
  grep -q '^violation \[tokens\]' "$out" && fail "$1: the tokens check failed"
  # A key may fail at a grant whose token is above the key's next one: the
  # grant with that next token was issued first, to a request that passed
  # a waiter. A token below it (gone back) would be the counter's fault.
  python3 - "$out" <<'PY' || fail "$1: a key failed on a token out of order"
import re, sys
bad = 0
for line in open(sys.argv[1]):
    m = re.search(r"got `A (\d+) [^`]*`.*its token is not the key's next one, (\d+)", line)
    if line.startswith("violation [key]") and m and int(m.group(1)) <= int(m.group(2)):
        print(line.rstrip()); bad += 1
    if line.startswith("violation [key]") and "no token of the key is left" in line:
        print(line.rstrip()); bad += 1
sys.exit(1 if bad else 0)
PY
  [ "$(grep -c '^violation \[key\]' "$out")" -eq "$(sed -n 's/^violations: //p' "$out")" ] ||
    fail "$1: a violation that is not a key's"
}

run redis-lock-fuzz-counter
[ $status -eq 1 ] || fail "counter tokens, polling every 500 ms: exit $status, the document states FIFO violations"
only_key_violations "counter tokens, polling every 500 ms"

run redis-lock-fuzz-notify
[ $status -eq 1 ] || fail "counter tokens, by notification: exit $status, the document states FIFO violations"
only_key_violations "counter tokens, by notification"

# The adapter on its own, as the document starts it.
mapfile -t alone < <(block redis-lock-alone)
[ ${#alone[@]} -eq 3 ] || fail "the block redis-lock-alone is not three lines"
redis_port=$(free_port) adapter_port=$(free_port)
line=$(localize "${alone[0]}" "$redis_port" "$adapter_port")
eval "exec ${line% &}" >redis-alone.log 2>&1 &
started+=($!)
wait_port "$redis_port" || fail "redis-server did not start"
line=$(localize "${alone[1]}" "$redis_port" "$adapter_port")
eval "exec ${line% &}" 2>adapter-alone.log &
adapter=$!
started+=($adapter)
wait_port "$adapter_port" || fail "the adapter did not start: $(cat adapter-alone.log)"
answer=$(bash -c "$(localize "${alone[2]}" "$redis_port" "$adapter_port")")
[[ $answer =~ ^A\ [0-9]+\ alice\ printer$ ]] || fail "the adapter answered '$answer'"
kill -TERM "$adapter"
wait "$adapter"
adapter_status=$?
[ $adapter_status -eq 0 ] || fail "the adapter exited $adapter_status on SIGTERM"
echo "alone: $answer; SIGTERM: exit 0"
echo ok
