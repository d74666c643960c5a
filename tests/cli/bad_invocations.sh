#!/usr/bin/env bash
# Every input a user can give gets a clear answer. A table of bad
# invocations, a few for every subcommand, each run in a session of its
# own under a time limit: the exit code must be exactly the documented one
# (2 for bad usage, bad input or environment), a refusal must be one line
# on stderr that names the offending option or file, nothing may hang or
# die of a signal (no core dump), and no process of the session may be
# left when the command is gone. Then the cases that need more than one
# command: tokens running out in `serve`, `trace-to-tla` without -o, an
# --explain of a key the history never names, the last seeds of the range.
#
# usage: bad_invocations.sh LOCKSTEP SOURCE_DIR WORK_DIR
set -uo pipefail
lockstep=$(realpath "$1") source_dir=$(realpath "$2") work=$(realpath -m "$3")
rm -rf "$work" && mkdir -p "$work"
failures=0 cases=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Runs LOCKSTEP ARGS... in a new session (its id is the leader's pid, which
# the shell writes before it becomes lockstep) and waits for every process
# of that session to be gone. Sets code, out and err.
run_in_session() {
  local sid_file=$work/sid
  rm -f "$sid_file"
  timeout -k 2 20 setsid -w sh -c 'echo $$ > "$0"; exec "$@"' "$sid_file" "$lockstep" "$@" \
    >"$work/out" 2>"$work/err" </dev/null
  code=$?
  out=$(cat "$work/out") err=$(cat "$work/err")
  sid=$(cat "$sid_file" 2>/dev/null || echo 0)
  left=""
  for _ in $(seq 1 40); do
    left=$(ps -o pid=,stat=,args= -s "$sid" 2>/dev/null | awk '$2 !~ /^Z/' || true)
    [ -z "$left" ] && break
    sleep 0.05
  done
  if [ -n "$left" ] && [ "$sid" != 0 ]; then
    pkill -KILL -s "$sid" 2>/dev/null  # what this test started, by session id
  fi
}

# expect CODE NEEDLE ARGS...: exit CODE; for CODE 2 exactly one line on
# stderr containing NEEDLE, otherwise NEEDLE anywhere in the output.
expect() {
  local expected=$1 needle=$2
  shift 2
  cases=$((cases + 1))
  run_in_session "$@"
  local shown="lockstep $*"
  if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
    fail "$shown: did not end within 20 s"
  elif [ "$code" -ge 128 ]; then
    fail "$shown: died of signal $((code - 128)): $err"
  elif [ "$code" -ne "$expected" ]; then
    fail "$shown: exit $code, expected $expected: $err"
  fi
  if [ "$expected" -eq 2 ]; then
    [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [ -n "$err" ] || fail "$shown: not one line on stderr: $err"
    [[ "$err" == *"$needle"* ]] || fail "$shown: the message does not name '$needle': $err"
    [ ${#err} -le 600 ] || fail "$shown: a message of ${#err} characters"
  else
    [[ "$out$err" == *"$needle"* ]] || fail "$shown: the output does not say '$needle': $out $err"
  fi
  [ -z "$left" ] || fail "$shown: left running: $left"
}

spec=$source_dir/spec
vectors=$source_dir/tests/vectors
missing=/nonexistent-folder-$$
folder=$work/a-folder
mkdir -p "$folder"
touch "$work/a-file"
max=18446744073709551615

# --- the top level and the exit-code convention
expect 2 "unknown command 'foo'" foo
expect 2 "a command is required" 
expect 2 "unknown command 'nope'" bench nope
expect 2 "a command is required" bench
expect 2 "--no-such-option" sim --no-such-option
expect 2 "--seed" sim --seed abc
expect 2 "max-keys" serve --max-keys 0

# --- sim: seeds bounded, no wrap-around, one seed where one is drawn,
# options a mode does not use refused
expect 2 "--seed" sim --seed -1
expect 2 "--seed" sim --seed "$max"
expect 2 "--seeds" sim --seeds "1..$max"
expect 2 "--seeds" sim --seeds 1..2..3
expect 2 "--seeds" sim --seeds 5..1
expect 2 "--seeds" sim --seeds 0x10..0x20
expect 2 "--seed" sim --seed 1 --seeds 1..2
expect 2 "--clients" sim --clients 0
expect 2 "--keys" sim --keys -3
expect 2 "--duration-ms" sim --duration-ms 0
expect 2 "--nodes" sim --mode raft --nodes 0
expect 2 "--mode" sim --mode paxos
expect 2 "--clients" sim --mode raft --clients 5
expect 2 "--keys" sim --mode raft --keys 5
expect 2 "--skew-beyond-bound" sim --skew-beyond-bound
expect 2 "--skew-beyond-bound" sim --mode raft --skew-beyond-bound
expect 2 "--nodes" sim --nodes 5
expect 2 "--trace" sim --mode raft --seed 1 --trace "$work/t.ndjson"
expect 2 "--validate-trace" sim --mode raft --seed 1 --validate-trace
expect 2 "--trace" sim --mode cluster --seeds 1..3 --trace "$work/t.ndjson"
expect 2 "$missing/x.ndjson" sim --mode cluster --seed 1 --trace "$missing/x.ndjson"
expect 2 "--timeline" sim --mode raft --seed 1 --timeline "$work/t.svg"
expect 2 "serve --list-bugs" sim --inject-bug nope
expect 2 "Raft" sim --mode cluster --inject-bug lifo-handoff
expect 2 "$missing/x.svg" sim --seed 1 --timeline "$missing/x.svg"
expect 2 "$missing/x.ndjson" sim --seed 1 --trace "$missing/x.ndjson"
expect 2 "$missing/x.svg" sim --mode cluster --seed 1 --timeline "$missing/x.svg"
expect 2 "$folder" sim --seed 1 --trace "$folder"
expect 2 "--timeline" sim --seeds 1..3 --timeline "$work/t.svg"
expect 2 "--trace" sim --seeds 1..3 --trace "$work/t.ndjson"
expect 2 "$work/a-file" sim --shrink-dir "$work/a-file/sub"

# --- serve: every limit in a range that lets it serve
expect 2 "--lines-per-turn" serve --lines-per-turn 0
expect 2 "--max-output-bytes" serve --max-output-bytes 0
expect 2 "--max-output-bytes" serve --max-output-bytes 524
expect 2 "--port" serve --port 70000
expect 2 "--port" serve --port -1
expect 2 "--host" serve --host not-an-address
expect 2 "--max-connections" serve --max-connections 0
expect 2 "--max-line-bytes" serve --max-line-bytes 10
expect 2 "--sweep-ms" serve --sweep-ms -5
expect 2 "--max-waiters" serve --max-waiters -1
expect 2 "serve --list-bugs" serve --inject-bug nope
expect 2 "$folder is a folder" serve --state-file "$folder"
expect 2 "$missing/state" serve --state-file "$missing/state"
printf 'not a number\n' >"$work/bad-state"
expect 2 "$work/bad-state" serve --port 0 --state-file "$work/bad-state"

# --- serve --cluster: its own options in range, the other mode's refused,
# an etcd that does not answer within its timeout
node=(serve --cluster --etcd 127.0.0.1:1 --node-id n1 --advertise 127.0.0.1:7001 --port 0)
expect 2 "--leader-ttl-s" "${node[@]}" --leader-ttl-s 0
expect 2 "--etcd-timeout-ms" "${node[@]}" --etcd-timeout-ms 50
expect 2 "--session-window" "${node[@]}" --session-window 0
expect 2 "--waiter-grace-ms" "${node[@]}" --waiter-grace-ms -1
expect 2 "--waiter-grace-ms" "${node[@]}" --waiter-grace-ms 86400001
expect 2 "--waiter-grace-ms" serve --waiter-grace-ms 100
expect 2 "--snapshot-every" "${node[@]}" --snapshot-every -1
expect 2 "--max-in-flight" "${node[@]}" --max-in-flight 0
expect 2 "--advertise" serve --cluster --etcd 127.0.0.1:1 --node-id n1 --advertise nowhere
expect 2 "--node-id" serve --cluster --etcd 127.0.0.1:1 --advertise 127.0.0.1:7001
expect 2 "etcd" serve --cluster --node-id n1 --advertise 127.0.0.1:7001
expect 2 "--state-file" "${node[@]}" --state-file "$work/state"
expect 2 "--sweep-ms" "${node[@]}" --sweep-ms 100
expect 2 "cluster --list-bugs" "${node[@]}" --inject-bug lifo-handoff
expect 2 "needs --cluster" serve --etcd 127.0.0.1:1
expect 2 "cannot read the cluster from etcd at 127.0.0.1:1" "${node[@]}" --etcd-timeout-ms 500
expect 2 "--etcd is required with --cluster" serve --cluster --node-id n1 --advertise 127.0.0.1:7001
expect 2 "--etcd: 'http://127.0.0.1:1' is a URL: give host:port (127.0.0.1:1)" serve --cluster --etcd http://127.0.0.1:1 --node-id n1 --advertise 127.0.0.1:7001
expect 2 "--etcd: '127.0.0.1' is not host:port" serve --cluster --etcd 127.0.0.1 --node-id n1 --advertise 127.0.0.1:7001
expect 2 "--host: '999.1.1.1' is not an IPv4 address" serve --host 999.1.1.1
expect 2 "--host: '999.1.1.1' is not an IPv4 address" "${node[@]}" --host 999.1.1.1
expect 2 "--node-id" "${node[@]/n1/two words}"
expect 2 "--members needs --init" "${node[@]}" --members n1=127.0.0.1:7001
expect 2 "--members: node id n1 is given twice" "${node[@]}" --init --members n1=127.0.0.1:7001,n1=127.0.0.1:7002
expect 2 "--members does not name --node-id n1" "${node[@]}" --init --members n2=127.0.0.1:7002
# Every refusal of serve begins with the same prefix, the parser's or not.
run_in_session serve --cluster --node-id n1 --advertise 127.0.0.1:7001
cases=$((cases + 1))
[[ "$err" == "lockstep serve: "* ]] || fail "serve's refusal does not begin with 'lockstep serve: ': $err"

# --- cluster: a cluster's identity and members in etcd
expect 2 "a command is required" cluster
expect 2 "--etcd is required" cluster show
expect 2 "--etcd: 'http://127.0.0.1:1' is a URL" cluster show --etcd http://127.0.0.1:1
expect 2 "--prefix" cluster show --etcd 127.0.0.1:1 --prefix 'a b'
expect 2 "--members is required" cluster init --etcd 127.0.0.1:1
expect 2 "--members: 'n1' is not ID=HOST:PORT" cluster init --etcd 127.0.0.1:1 --members n1
expect 2 "--members: n1 and n2 have one address" cluster init --etcd 127.0.0.1:1 --members n1=h:1,n2=h:1
expect 2 "--advertise" cluster add --etcd 127.0.0.1:1 --node-id n4 --advertise nowhere
expect 2 "--node-id is required" cluster remove --etcd 127.0.0.1:1
expect 2 "cannot read the cluster from etcd at 127.0.0.1:1 within 500 ms" cluster show --etcd 127.0.0.1:1 --etcd-timeout-ms 500

# --- serve --cluster against a one-member etcd this script starts: a
# prefix that holds no cluster (the typo that used to start a second lock
# service), a node id that is not a member, an address that is not the
# member's, a node id a running node holds, etcd's peer port; and the
# cluster command's own refusals on it.
if command -v etcd >/dev/null; then
  free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
  etcd_client=$(free_port) etcd_peer=$(free_port) node_port=$(free_port)
  etcd --name bad --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$etcd_client" \
    --advertise-client-urls "http://127.0.0.1:$etcd_client" --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" --initial-cluster "bad=http://127.0.0.1:$etcd_peer" \
    2>"$work/etcd.log" &
  etcd_pid=$!
  e=127.0.0.1:$etcd_client
  run_in_session cluster init --etcd "$e" --prefix real --members "n1=127.0.0.1:$node_port,n2=127.0.0.1:7002" --etcd-timeout-ms 20000
  [ "$code" -eq 0 ] || fail "cluster init on a fresh etcd: exit $code: $err"
  member=(serve --cluster --etcd "$e" --prefix real --leader-ttl-s 1 --port 0)
  expect 2 "--prefix 'lock' holds no cluster in etcd at $e" "${member[@]/real/lock}" --node-id n1 --advertise "127.0.0.1:$node_port"
  expect 2 "--node-id n9 is not a member of the cluster under --prefix 'real'" "${member[@]}" --node-id n9 --advertise 127.0.0.1:7009
  expect 2 "--advertise 127.0.0.1:7009 is not n1's address" "${member[@]}" --node-id n1 --advertise 127.0.0.1:7009
  expect 2 "--etcd 127.0.0.1:$etcd_peer is the peer port of etcd member bad" serve --cluster --etcd "127.0.0.1:$etcd_peer" --prefix real --node-id n1 --advertise "127.0.0.1:$node_port" --port 0
  expect 2 "--init: --prefix 'real' holds a cluster already" "${member[@]}" --node-id n1 --advertise "127.0.0.1:$node_port" --init
  expect 2 "holds a cluster already" cluster init --etcd "$e" --prefix real --members n1=127.0.0.1:1
  expect 2 "--node-id n2 is a member already" cluster add --etcd "$e" --prefix real --node-id n2 --advertise 127.0.0.1:7012
  expect 2 "--node-id n9 is not a member" cluster remove --etcd "$e" --prefix real --node-id n9
  expect 2 "--prefix 'none' in etcd at $e holds no cluster" cluster show --etcd "$e" --prefix none
  # n1 runs; a second process with its id is refused, within its claim's TTL.
  "$lockstep" serve --cluster --etcd "$e" --prefix real --leader-ttl-s 1 --node-id n1 --advertise "127.0.0.1:$node_port" \
    --port "$node_port" 2>"$work/n1.log" &
  n1_pid=$!
  for _ in $(seq 1 100); do grep -q " leads " "$work/n1.log" && break; sleep 0.1; done
  grep -q " leads " "$work/n1.log" || fail "n1 did not lead: $(cat "$work/n1.log")"
  expect 2 "--node-id n1 is held by a running process" "${member[@]}" --node-id n1 --advertise "127.0.0.1:$node_port"
  expect 2 "--node-id n1 is running" cluster remove --etcd "$e" --prefix real --node-id n1
  expect 0 "n1 127.0.0.1:$node_port running (" cluster show --etcd "$e" --prefix real
  grep -q "stops leading" "$work/n1.log" && fail "the second n1 deposed the first: $(cat "$work/n1.log")"
  kill -TERM "$n1_pid"
  wait "$n1_pid" || fail "n1 exited $? on SIGTERM"
  kill -TERM "$etcd_pid"
  wait "$etcd_pid" 2>/dev/null
else
  echo "etcd is not installed: the refusals that need a running etcd are not checked"
fi
expect 2 "--exec-cluster" conform --etcd 127.0.0.1:1 "$vectors"
expect 2 "--connections" bench cluster --connections 0
expect 2 "--seconds" bench cluster --seconds 0
# --failover's own options only with it, and in range.
expect 2 "--trials" bench cluster --trials 3
expect 2 "--trials" bench cluster --failover --trials 0
expect 2 "--trials" bench cluster --failover --trials 101
expect 2 "--etcd-timeout-ms" bench cluster --failover --etcd-timeout-ms 99
expect 2 "--etcd-timeout-ms" bench cluster --etcd-timeout-ms 2000

# --- bench: arguments that make the figures meaningless, before anything starts
expect 2 "--connections" bench server --connections -5
expect 2 "--connections" bench server --connections 0
expect 2 "--keys" bench server --keys 0
expect 2 "--seconds" bench server --seconds 0
expect 2 "--against" bench server --against memcached
expect 2 "--redis-server" bench server --redis-server "$missing/redis-server"
expect 2 "--requests" bench engine --requests 0
expect 2 "--keys" bench engine --keys 10
expect 2 "--keys" bench engine --keys -1

# --- fuzz and check-history
expect 2 "--duration-s" fuzz --target 127.0.0.1:7878 --duration-s 0
expect 2 "--duration-s" fuzz --target 127.0.0.1:7878 --duration-s -1
expect 2 "--duration-s" fuzz --target 127.0.0.1:7878 --duration-s nan
expect 2 "--tolerance-ms" fuzz --target 127.0.0.1:7878 --tolerance-ms -5
expect 2 "99999" fuzz --target 127.0.0.1:99999
expect 2 "--target" fuzz --target localhost
expect 2 "--clients" fuzz --target 127.0.0.1:7878 --clients 0
expect 2 "--keys" fuzz --target 127.0.0.1:7878 --keys 0
expect 2 "--max-keys" fuzz --target 127.0.0.1:7878 --max-keys 0
expect 2 "--exec" fuzz
expect 2 "$missing/h.ndjson" fuzz --target 127.0.0.1:7878 --history "$missing/h.ndjson"
expect 2 "$missing/r.html" fuzz --target 127.0.0.1:7878 --report "$missing/r.html"
expect 2 "$missing/j.xml" fuzz --target 127.0.0.1:7878 --junit "$missing/j.xml"
expect 2 "$work/a-file" fuzz --target 127.0.0.1:7878 --vectors "$work/a-file/v"
expect 2 "--explain" fuzz --target 127.0.0.1:7878 --explain ""
expect 2 "--lease-ms" fuzz --target 127.0.0.1:7878 --lease-ms 0..5
expect 2 "--lease-ms" fuzz --target 127.0.0.1:7878 --lease-ms 9..5
expect 2 "--wait-ms" fuzz --target 127.0.0.1:7878 --wait-ms 5
expect 2 "--wait-ms" fuzz --target 127.0.0.1:7878 --wait-ms -1..5
expect 2 "--lease-ms" fuzz --target 127.0.0.1:7878 --max-lease-ms 1000 --lease-ms 500..2000
expect 2 "--no-limits" fuzz --target 127.0.0.1:7878 --no-limits --max-keys 5
# fuzz --mode cluster: its options checked, simple mode's refused, and a
# nemesis with nothing the fuzzer started to act on refused.
expect 2 "--mode" fuzz --mode raft --target 127.0.0.1:7878
expect 2 "--exec-node" fuzz --mode cluster
expect 2 "--exec-node" fuzz --mode cluster --target 127.0.0.1:7001 --exec-node 'x {port}'
expect 2 "localhost:2" fuzz --mode cluster --target 127.0.0.1:7001,localhost:2
expect 2 "--target" fuzz --mode cluster --target 127.0.0.1:7001,
expect 2 "--target" fuzz --target 127.0.0.1:7001,127.0.0.1:7002
expect 2 "--nemesis" fuzz --mode cluster --target 127.0.0.1:7001 --nemesis kill
expect 2 "--nemesis-every-s" fuzz --mode cluster --target 127.0.0.1:7001 --nemesis-every-s 3
expect 2 "--nodes" fuzz --mode cluster --target 127.0.0.1:7001 --nodes 3
expect 2 "--nemesis" fuzz --mode cluster --exec-node 'x {port}' --nemesis kill,boom
expect 2 "--nemesis" fuzz --mode cluster --exec-node 'x {port}' --nemesis kill,kill
expect 2 "--nemesis" fuzz --mode cluster --exec-node 'x {port}' --nemesis ''
expect 2 "--nemesis-every-s" fuzz --mode cluster --exec-node 'x {port}' --nemesis kill --nemesis-every-s 0.1
expect 2 "--nemesis-every-s" fuzz --mode cluster --exec-node 'x {port}' --nemesis kill --nemesis-every-s 20 --duration-s 10
expect 2 "--nemesis-every-s" fuzz --mode cluster --exec-node 'x {port}' --nemesis-every-s 3
expect 2 "--nemesis-etcd" fuzz --mode cluster --exec-node 'x {port}' --nemesis kill --nemesis-etcd
# The link faults: a template that does not advertise its relay, a store
# to cut from, slow-etcd's delay in range and only with slow-etcd, and
# --nemesis-at-leader only with a nemesis.
expect 2 "{advertise}" fuzz --mode cluster --exec-node 'x {port}' --etcd-members 3 --nemesis partition-clients
expect 2 "{advertise}" fuzz --mode cluster --exec-node 'x {port}' --etcd-members 3 --nemesis all
expect 2 "--etcd-members" fuzz --mode cluster --exec-node 'x {advertise}' --nemesis partition-node
expect 2 "--etcd-members" fuzz --mode cluster --exec-node 'x {advertise}' --nemesis slow-etcd
expect 2 "--etcd-members" fuzz --mode cluster --exec-node 'x {advertise}' --nemesis etcd-minority
expect 2 "--etcd-members" fuzz --mode cluster --exec-node 'x {advertise}' --etcd-members 1 --nemesis etcd-minority
expect 2 "--nemesis-slow-ms" fuzz --mode cluster --exec-node 'x {advertise}' --etcd-members 3 --nemesis slow-etcd --nemesis-slow-ms 0
expect 2 "--nemesis-slow-ms" fuzz --mode cluster --exec-node 'x {advertise}' --etcd-members 3 --nemesis slow-etcd --nemesis-slow-ms 10001
expect 2 "--nemesis-slow-ms" fuzz --mode cluster --exec-node 'x {advertise}' --etcd-members 3 --nemesis partition-node --nemesis-slow-ms 100
expect 2 "--nemesis-at-leader" fuzz --mode cluster --exec-node 'x {port}' --nemesis-at-leader
expect 2 "--nemesis-at-leader" fuzz --mode cluster --target 127.0.0.1:7001 --nemesis-at-leader
expect 2 "--nemesis-at-leader" fuzz --target 127.0.0.1:7878 --nemesis-at-leader
expect 2 "--nemesis-slow-ms" fuzz --target 127.0.0.1:7878 --nemesis-slow-ms 100
# Wrong clocks: one of the two, only on nodes the fuzzer starts, an
# allowance to be wrong within, and never in simple mode.
expect 2 "--skew-clocks" fuzz --mode cluster --exec-node 'x {port}' --skew-clocks --clock-beyond-bound
expect 2 "--skew-clocks" fuzz --mode cluster --target 127.0.0.1:7001 --skew-clocks
expect 2 "--clock-beyond-bound" fuzz --mode cluster --target 127.0.0.1:7001 --clock-beyond-bound
expect 2 "--clock-allowance-ms" fuzz --mode cluster --exec-node 'x {port}' --skew-clocks --clock-allowance-ms 1
expect 2 "--clock-allowance-ms" fuzz --mode cluster --exec-node 'x {port}' --nemesis clock-jump --clock-allowance-ms 0
expect 2 "--skew-clocks" fuzz --target 127.0.0.1:7878 --skew-clocks
expect 2 "--clock-beyond-bound" fuzz --target 127.0.0.1:7878 --clock-beyond-bound
expect 2 "--nodes" fuzz --mode cluster --exec-node 'x {port}' --nodes 0
expect 2 "--nodes" fuzz --mode cluster --exec-node 'x {port}' --nodes 8
expect 2 "--etcd-members" fuzz --mode cluster --exec-node 'x {port}' --etcd-members 0
expect 2 "--etcd-members" fuzz --mode cluster --exec-node 'x {port}' --etcd-members 9
expect 2 "{etcd}" fuzz --mode cluster --exec-node 'x {etcd} {port}'
expect 2 "--clock-allowance-ms" fuzz --mode cluster --target 127.0.0.1:7001 --clock-allowance-ms -1
expect 2 "--max-lateness-ms" fuzz --mode cluster --target 127.0.0.1:7001 --max-lateness-ms -1
expect 2 "--max-lateness-ms" fuzz --target 127.0.0.1:7878 --max-lateness-ms 100
expect 2 "--exec-node" fuzz --target 127.0.0.1:7878 --exec-node 'x {port}'
expect 2 "--sweep-ms" fuzz --mode cluster --target 127.0.0.1:7001 --sweep-ms 500
expect 2 "--restart-every-s" fuzz --mode cluster --target 127.0.0.1:7001 --restart-every-s 1
expect 2 "--exec" fuzz --mode cluster --exec 'x {port}'
expect 2 "--lease-ms" fuzz --mode cluster --target 127.0.0.1:7001 --lease-ms 0..5
expect 2 "--wait-ms" fuzz --mode cluster --target 127.0.0.1:7001 --wait-ms 9..5
expect 2 "--budget-memory-mb" check-history "$work/a-file" --budget-memory-mb 1
expect 2 "--seeds" miss-rate --seeds 5..1
expect 2 "--seeds" miss-rate --seeds 1..200000
expect 2 "--bug" miss-rate --bug no-such-bug
expect 2 "--budget-states" miss-rate --budget-states 0
# Shards and their merge (docs/ci-fuzzing.md, "Shards").
expect 2 "--shard" sim --shard 0/4
expect 2 "--shard" sim --shard 5/4
expect 2 "--shard" sim --shard 1/x
expect 2 "--shard" sim --seeds 1..3 --shard 1/4
expect 2 "--shard" sim --seed 7 --shard 1/2
expect 2 "--shard" miss-rate --seeds 1..2 --shard 3/3
expect 2 "--summary-json" sim --seeds 1..2 --summary-json /nonexistent/summary.json
expect 2 "files" merge
expect 2 "/nonexistent/summary.json" merge /nonexistent/summary.json
expect 2 "not JSON" merge "$source_dir/README.md"
expect 2 "--history" sim --seeds 1..2 --history "$work/h.ndjson"
expect 2 "$missing/h.ndjson" sim --seed 1 --history "$missing/h.ndjson"
expect 2 "$folder is a folder" check-history "$folder"
expect 2 "$missing/h.ndjson" check-history "$missing/h.ndjson"
expect 2 "--budget-states" check-history "$work/a-file" --budget-states 0
expect 2 "$work/a-file" check-history "$work/a-file"

# --- check
expect 2 "--depth" check --cfg "$spec/MCsweep.cfg" --depth -1
expect 2 "--depth" check --cfg "$spec/MCsweep.cfg" --depth 1.5
expect 2 "$spec is a folder" check --cfg "$spec"
expect 2 "$missing/x.cfg" check --cfg "$missing/x.cfg"
expect 2 "simple mode" check --cfg "$spec/ClusterMCleader.cfg"
expect 2 "ClusterMC" check --cfg "$spec/ClusterMCskew.cfg"
expect 2 "--inject-bug" check --cfg "$spec/MCsweep.cfg" --inject-bug early-expiry
expect 2 "$missing/c.vec" check --cfg "$spec/MCsweep.cfg" --counterexample "$missing/c.vec"
expect 2 "--cfg" check

# --- conform
expect 2 "serve --list-bugs" conform --inject-bug nope "$vectors"
expect 2 "$missing/x.vec" conform "$missing/x.vec"
expect 2 "--against" conform --against nothing "$vectors"
expect 2 "--against" conform --against model --exec true "$vectors"
expect 2 "--inject-bug" conform --inject-bug lifo-handoff --exec true "$vectors"
expect 2 "--patience-ms" conform --patience-ms 0 --exec true "$vectors"
expect 2 "$missing/j.xml" conform --junit "$missing/j.xml" "$vectors"
expect 2 "no vector files" conform "$folder"
# A vector that is not one is bad input, refused before anything runs; a
# server that cannot start, or has no test clock, lets no vector run.
printf 'at 0 c1 A k alice 100 0\nexpect 0 c1 Q alice k\n' >"$work/bad-expect.vec"
expect 2 "$work/bad-expect.vec:2" conform "$work/bad-expect.vec"
printf 'at 0 c1 A k alice 100 0\nexpect 0 c1 A $a alice k\norder $a $b\n' >"$work/bad-order.vec"
expect 2 "$work/bad-order.vec:3" conform --exec true "$work/bad-order.vec"
expect 2 "cannot start" conform --exec 'exit 3' "$vectors/contract-01-new-token-each-registration.vec"
expect 2 "no test clock" conform --exec "exec $lockstep serve --quiet --port {port}" \
  "$vectors/contract-01-new-token-each-registration.vec"
expect 2 "cannot start" fuzz --exec 'exit 3' --duration-s 1
expect 2 "nothing accepts connections on 127.0.0.1:1" fuzz --target 127.0.0.1:1 --duration-s 1
# An option or a flag given twice is refused, named.
expect 2 "--seed is given 2 times" sim --seed 1 --seed 2
expect 2 "--swarm is given 2 times" sim --swarm --swarm
expect 2 "--exec is given 2 times" conform --exec a --exec b "$vectors"

# --- trace-to-tla and validate-trace
expect 2 "$folder is a folder" trace-to-tla "$folder"
expect 2 "$missing/t.ndjson" trace-to-tla "$missing/t.ndjson"
expect 2 "$folder is a folder" validate-trace "$folder"
expect 2 "$work/a-file" validate-trace --keep-dir "$work/a-file/k" "$work/a-file"

# --- playground
expect 2 "--port" playground --port 70000
expect 2 "--port" playground --port -1
expect 2 "no built page in $folder" playground --port 0 --dir "$folder"

# --- tokens run out: a state file two below the top lets `serve` issue the
# last token, then answer acquires `E tokens exhausted` (releases served)
# without dying; the next start refuses the file with that reason.
cases=$((cases + 1))
state=$work/tokens.state
echo 18446744073709551613 >"$state"
"$lockstep" serve --port 0 --state-file "$state" 2>"$work/serve.log" &
serve_pid=$!
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log")
  [ -n "$port" ] && break
  sleep 0.05
done
if [ -z "$port" ]; then
  fail "serve with a state file near the top did not start: $(cat "$work/serve.log")"
else
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'A k1 a 10000 0\nA k2 a 10000 0\nA k3 a 10000 0\nR k2 18446744073709551615\nA k2 b 10 0\n' >&3
  replies=()
  for _ in 1 2 3 4 5; do read -r -t 5 line <&3 && replies+=("$line"); done
  exec 3<&-
  expected_replies="A 18446744073709551614 a k1|A 18446744073709551615 a k2|E tokens exhausted|R 18446744073709551615 k2|E tokens exhausted"
  got=$(IFS='|'; echo "${replies[*]}")
  [ "$got" = "$expected_replies" ] || fail "tokens near the top: got '$got', expected '$expected_replies'"
  kill -0 "$serve_pid" 2>/dev/null || fail "serve died when tokens ran out"
  expect 2 "cannot listen on 127.0.0.1:$port" serve --port "$port"  # that port is taken
  grep -q "tokens exhausted" "$work/serve.log" || fail "serve did not log the exhaustion"
  [ "$(grep -c 'tokens exhausted' "$work/serve.log")" -eq 1 ] || fail "serve logged the exhaustion more than once"
  kill -TERM "$serve_pid"
  wait "$serve_pid"
  serve_code=$?
  [ "$serve_code" -eq 0 ] || fail "serve exited $serve_code on SIGTERM after tokens ran out"
  [ "$(cat "$state")" = "$max" ] || fail "the state file holds $(cat "$state"), expected $max"
fi
expect 2 "tokens exhausted" serve --port 0 --state-file "$state"

# --- trace-to-tla without -o writes into a new folder it names, never into
# the current one (which could be spec/).
cases=$((cases + 1))
"$lockstep" sim --seed 1 --duration-ms 2000 --trace "$work/seed-1.ndjson" >/dev/null || fail "sim --trace failed"
mkdir -p "$work/cwd" && cp "$spec/LockServer.tla" "$work/cwd/"
before=$(cd "$work/cwd" && ls -l --time-style=full-iso)
converted=$(cd "$work/cwd" && "$lockstep" trace-to-tla "$work/seed-1.ndjson") || fail "trace-to-tla without -o failed"
after=$(cd "$work/cwd" && ls -l --time-style=full-iso)
[ "$before" = "$after" ] || fail "trace-to-tla without -o changed the current folder"
new_folder=$(printf '%s\n' "$converted" | sed -n 's/^no -o given: writing into the new folder //p')
if [ -n "$new_folder" ] && [ -f "$new_folder/TraceRun.tla" ]; then
  rm -rf "$new_folder"
else
  fail "trace-to-tla without -o did not name a new folder holding TraceRun.tla: $converted"
fi

# --- --explain of a key the history never names says so; the verdict stands.
cat >"$work/small.ndjson" <<'EOF'
{"schema":"lockstep.history/1","limits":{"max_keys":6,"max_waiters_per_key":3,"max_waiters":24,"sweep_ms":1000,"max_lease_ms":10000,"max_wait_ms":10000,"max_line_bytes":1024},"tolerance_ms":50}
{"t_us":0,"ev":"connect","conn":1}
{"t_us":1000,"ev":"send","conn":1,"line":"A k0 alice 300 0"}
{"t_us":1200,"ev":"recv","conn":1,"line":"A 17 alice k0"}
EOF
expect 0 "no request of the history names key \`nokey\`" check-history "$work/small.ndjson" --explain nokey
expect 0 "violations: 0" check-history "$work/small.ndjson" --explain k0
# The reading of a history: simple or cluster, and the options only a
# cluster's reading uses.
expect 2 "--mode" check-history "$work/small.ndjson" --mode paxos
expect 2 "--mode cluster" check-history "$work/small.ndjson" --clock-allowance-ms 20
expect 2 "--mode cluster" check-history "$work/small.ndjson" --max-lateness-ms 100
expect 2 "--max-lateness-ms" check-history "$work/small.ndjson" --mode cluster --max-lateness-ms -1
expect 2 "--clock-allowance-ms" check-history "$work/small.ndjson" --mode cluster --clock-allowance-ms 3600001
expect 0 "read as a cluster" check-history "$work/small.ndjson" --mode cluster --clock-allowance-ms 20
printf '%s\n' '{"schema":"lockstep.history/1","mode":"raft"}' >"$work/mode.ndjson"
expect 2 "mode" check-history "$work/mode.ndjson"
printf '%s\n' '{"schema":"lockstep.history/1","max_lateness_ms":5}' >"$work/lateness.ndjson"
expect 2 "max_lateness_ms" check-history "$work/lateness.ndjson"
# sim --history: one seed, and not of the register; miss-rate's modes.
expect 2 "--history" sim --mode raft --seed 1 --history "$work/h.ndjson"
expect 2 "--history" sim --mode cluster --seeds 1..2 --history "$work/h.ndjson"
expect 2 "--mode" miss-rate --mode raft
expect 2 "--nodes" miss-rate --nodes 5
expect 2 "--nodes" miss-rate --mode cluster --nodes 2
expect 2 "--bug" miss-rate --mode cluster --bug lifo-handoff

# --- the last seeds of the range run and end (the loop does not wrap).
expect 0 "violations: 0" sim --seeds 9223372036854775806..9223372036854775807 --duration-ms 200
expect 0 "violations: 0" sim --mode raft --seeds 9223372036854775806..9223372036854775807 --duration-ms 200

# On a terminal sim draws a progress bar; at the last seeds of the range it
# once wrapped around and threw. `script` gives it a terminal.
cases=$((cases + 1))
if command -v script >/dev/null; then
  tty_out=$(timeout 20 script -qec "$lockstep sim --seeds 9223372036854775806..9223372036854775807 --duration-ms 200" /dev/null)
  tty_code=$?
  [ "$tty_code" -eq 0 ] || fail "sim on a terminal at the last seeds: exit $tty_code: $tty_out"
  [[ "$tty_out" == *"violations: 0"* ]] || fail "sim on a terminal at the last seeds: no summary: $tty_out"
fi

echo "$cases cases, $failures failed"
[ "$failures" -eq 0 ]
