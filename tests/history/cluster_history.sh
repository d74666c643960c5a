#!/usr/bin/env bash
# The cluster simulator's histories as a user meets them: `sim --mode
# cluster --seed N --history FILE` writes the clients' view (twice the same
# bytes for one seed), `check-history FILE` reads it as a cluster's (its
# header says so, and states the lateness its run really had as the
# maximum) and it conforms, with its worst lateness printed; read by
# simple mode's rules instead (`--mode simple`) the session fields are
# malformed lines and it does not; it needs no lateness, and a maximum of
# 0 ms passes it, while a bug run's maximum below what its run needs fails
# it by lateness; and a run with a cluster bug the clients can
# see (token-per-key: two keys grant one token) is a violation.
#
# usage: cluster_history.sh LOCKSTEP WORK_DIR
set -uo pipefail
lockstep=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# check EXPECTED_CODE NEEDLE ARGS...: check-history exits EXPECTED_CODE and
# prints NEEDLE.
check() {
  local expected=$1 needle=$2
  shift 2
  local out code
  out=$("$lockstep" check-history "$@" 2>&1)
  code=$?
  [ "$code" -eq "$expected" ] || fail "check-history $*: exit $code, expected $expected: $(tail -3 <<<"$out")"
  [[ "$out" == *"$needle"* ]] || fail "check-history $*: no \`$needle\` in: $(tail -5 <<<"$out")"
}

"$lockstep" sim --mode cluster --seed 1 --swarm --history "$work/a.ndjson" >"$work/sim.out" || fail "sim --history: exit $?"
"$lockstep" sim --mode cluster --seed 1 --swarm --history "$work/b.ndjson" >/dev/null
cmp -s "$work/a.ndjson" "$work/b.ndjson" || fail "two runs of seed 1 wrote different histories"
head -1 "$work/a.ndjson" | grep -q '"mode":"cluster"' || fail "the header does not say \"mode\":\"cluster\""
grep -q '"clock_allowance_ms":' "$work/a.ndjson" || fail "the header states no clock allowance"

grep -q '"max_lateness_ms":' "$work/a.ndjson" || fail "the header states no maximum lateness (the run's own)"
check 0 "worst lateness: " "$work/a.ndjson"
check 0 "verdict: conforms" "$work/a.ndjson" --mode cluster
check 1 "verdict: violation" "$work/a.ndjson" --mode simple
# Seed 1's run really was 37 ms late somewhere (its header's maximum), but
# its clients cannot tell: every answer has an explanation on time. Read
# with each operation at one instant, key k35's grant to c36s10 (heard at
# +7800 ms) is caused by the release heard at +7800 ms, applied at its
# last instant; an earlier reading, which took that release at its first
# instant (+7766 ms), reported 30 ms of lateness there, and a maximum of
# 10 ms failed it: a false alarm.
check 0 "worst lateness: 0 ms" "$work/a.ndjson" --max-lateness-ms 0

"$lockstep" sim --mode cluster --seed 1 --swarm --inject-bug token-per-key --history "$work/bug.ndjson" >/dev/null
[ $? -eq 1 ] || fail "sim --inject-bug token-per-key: the simulator saw nothing"
check 1 "violation [tokens]" "$work/bug.ndjson"

# Seed 8 with stale-release: a client's stale token released a key whose
# Expire had in fact been applied; a cluster whose Expire came 0.3 s late
# would answer the same. The run really was later than that elsewhere, so
# the header's maximum (the run's own lateness) lets it pass, while stating
# that nothing was late (1 ms) fails it, by lateness.
"$lockstep" sim --mode cluster --seed 8 --swarm --inject-bug stale-release --history "$work/late.ndjson" >/dev/null
grep -q '"max_lateness_ms":' "$work/late.ndjson" || fail "seed 8: the header states no maximum lateness"
check 0 "verdict: conforms" "$work/late.ndjson"
check 1 "later than the maximum lateness allows" "$work/late.ndjson" --max-lateness-ms 1

[ "$failures" -eq 0 ] && echo "cluster histories: ok"
[ "$failures" -eq 0 ]
