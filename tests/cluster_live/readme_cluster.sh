#!/usr/bin/env bash
# docs/running-a-cluster.md, run as written (with this build's
# lockstep): three etcd members and three nodes on one machine. Checks that
# the document's request is granted by the leader, that a follower redirects
# to the leader, that the document's `fuzz --mode cluster --target` of it
# conforms, that a node prints its status line on SIGUSR1, and that
# `kill $(jobs -p)` stops them all; whatever happens, everything it started
# is stopped and the directory removed.
#   readme_cluster.sh LOCKSTEP DOCUMENT (docs/running-a-cluster.md)
set -uo pipefail
lockstep=$1 readme=$2
extract() {  # the first code block after the marker $1
  awk -v marker="$1" '$0 ~ marker {found=1; next} found && /^```$/ {if (inside) exit; inside=1; next} found && inside' "$readme"
}
start=$(extract '<!-- running-a-cluster -->')
try=$(awk '/^exec 3<>\/dev\/tcp\/127.0.0.1\/27001/' "$readme")
[ -n "$start" ] && [ -n "$try" ] || { echo "the cluster commands of $readme were not found"; exit 1; }
start=${start//build\/default\/lockstep/$lockstep}
dir=
cleanup() {
  local pids
  pids=$(jobs -p)
  [ -n "$pids" ] && kill -CONT $pids 2>/dev/null && kill -9 $pids 2>/dev/null
  wait 2>/dev/null
  [ -n "$dir" ] && rm -rf "$dir"
}
trap cleanup EXIT
eval "$start"
ask() (  # PORT LINE: the first line answered, or nothing
  exec 2>/dev/null 4<>"/dev/tcp/127.0.0.1/$1" || exit 0
  echo "$2" >&4
  answer=
  read -t 5 -r answer <&4
  echo "$answer"
)
leader=
for _ in $(seq 1 150); do
  for port in 27001 27002 27003; do
    case $(ask $port 'R readme-probe 1') in N*) leader=$port ;; esac
  done
  [ -n "$leader" ] && break
  sleep 0.2
done
[ -n "$leader" ] || { echo "no node leads"; tail -n 5 "$dir"/*.log; exit 1; }
echo "leader: 127.0.0.1:$leader"
answer=$(eval "${try//27001/$leader}")
echo "documented request: $answer"
[[ $answer =~ ^A\ [0-9]+\ alice\ printer$ ]] || { echo "expected a grant"; exit 1; }
# A follower answers a bare `E not-leader` while it knows of no leader
# (docs/protocol.md, "Cluster nodes on the wire"): right after an election
# it may not have heard of the new one yet, so it is asked again for up to
# 5 s; any other answer, or a leader never named, fails.
for port in 27001 27002 27003; do
  [ "$port" = "$leader" ] && continue
  for _ in $(seq 1 25); do
    answer=$(ask $port 'A printer bob 1000 0')
    [ "$answer" = "E not-leader" ] || break
    sleep 0.2
  done
  echo "follower 127.0.0.1:$port: $answer"
  [ "$answer" = "E not-leader 127.0.0.1:$leader" ] || { echo "expected a redirect to the leader"; exit 1; }
done
# The document's "Fuzzing it as it runs" fuzzes this cluster as it runs.
fuzz=$(extract '<!-- fuzzing-a-running-cluster -->')
[ -n "$fuzz" ] || { echo "the fuzz --target command of $readme was not found"; exit 1; }
out=$(eval "${fuzz//build\/default\/lockstep/$lockstep}" 2>&1)
code=$?
echo "$out" | grep -E '^(run|tester|verdict|violations)'
[ "$code" -eq 0 ] && grep -q '^violations: 0$' <<<"$out" || { echo "fuzz --target: exit $code"; echo "$out" | tail -5; exit 1; }
node=$((leader - 27000))
# The document starts three etcd members, then nodes n1..n3: node N is job 3+N
# (its pid, not a search by name that could find another run's node).
kill -USR1 "$(jobs -p | sed -n "$((3 + node))p")"
sleep 0.5
grep -q "status node=n$node applied=" "$dir/n$node.log" || { echo "no status line"; exit 1; }
# The nodes were started last: each must stop cleanly (exit 0) on SIGTERM.
nodes=$(jobs -p | tail -3)
kill $(jobs -p)
failed=0
for pid in $nodes; do wait "$pid" || { echo "a node exited with $?"; failed=1; }; done
wait
echo "stopped"
exit $failed
