#!/usr/bin/env bash
# `cmake --install` as a user runs it, into a temporary prefix (this build's
# install step: nothing is rebuilt), then the installed files used without
# the build or the sources:
# - the binaries are there, and `lockstep --version` names the project's
#   version and the commit the sources are at;
# - the installed `lockstep` runs a simulator swarm and replays the
#   installed conformance vectors on the model;
# - a man page per binary and per subcommand (every one `lockstep --help`
#   lists), gzipped, titled by its name; the documents;
# - a project of its own (tests/install/consumer/, ten lines) finds the
#   client library with find_package(lockstep) in that prefix alone, builds,
#   and takes and gives back a lock from the installed `lockstep serve`.
# usage: install_prefix.sh CMAKE BUILD_DIR SOURCE_DIR VERSION WORK_DIR
set -uo pipefail
cmake=$1 build_dir=$2 source_dir=$3 version=$4 work=$5
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix

"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install failed"; }
grep -i warning "$work/install.log" && fail "cmake --install warned"
for binary in lockstep lockstep-etcd-lock lockstep-redis-lock; do
  [ -x "$prefix/bin/$binary" ] || fail "bin/$binary was not installed"
  "$prefix/bin/$binary" --version | grep -Eq "^$binary ${version//./\\.} \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)$" ||
    fail "$binary --version printed '$("$prefix/bin/$binary" --version)'"
done
lockstep=$prefix/bin/lockstep
echo "installed: $("$lockstep" --version)"
if head=$(git -C "$source_dir" rev-parse --short=12 HEAD 2>/dev/null); then
  "$lockstep" --version | grep -q "(commit $head" || fail "--version does not name the commit $head"
fi

"$lockstep" sim --seeds 1..3 >"$work/sim.out" 2>&1 || fail "the installed lockstep sim failed: $(tail -3 "$work/sim.out")"
grep -q '^violations: 0$' "$work/sim.out" || fail "the installed lockstep sim did not end with violations: 0"
"$lockstep" conform --against model "$prefix/share/lockstep/vectors" >"$work/conform.out" 2>&1 ||
  fail "the installed vectors do not pass on the model: $(tail -1 "$work/conform.out")"
vectors=$(find "$source_dir/tests/vectors" -name '*.vec' | wc -l)
grep -q ": $vectors passed, 0 failed, 0 skipped$" "$work/conform.out" || fail "not every vector was installed: $(tail -1 "$work/conform.out")"

man=$prefix/share/man/man1
pages="lockstep lockstep-etcd-lock lockstep-redis-lock"
for sub in $("$lockstep" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
  pages+=" lockstep-$sub"
done
for page in $pages; do
  gzip -t "$man/$page.1.gz" 2>/dev/null || fail "no man page $page.1.gz"
  title=$(echo "$page" | tr a-z A-Z)
  zcat "$man/$page.1.gz" | grep -q "^\.TH $title \"1\"" || fail "$page.1.gz is not titled $title"
done
echo "man pages: $(echo $pages | wc -w)"
for document in README.md $(cd "$source_dir" && ls docs/*.md); do
  cmp -s "$source_dir/$document" "$prefix/share/doc/lockstep/$document" || fail "$document was not installed"
done

# The consumer: only the prefix, no package registry, no source tree.
"$cmake" -S "$(dirname "$0")/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release >"$work/consumer.log" 2>&1 &&
  "$cmake" --build "$work/consumer" >>"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "the consumer did not build"; }
grep -q "^lockstep_DIR:PATH=$prefix/lib/cmake/lockstep$" "$work/consumer/CMakeCache.txt" ||
  fail "find_package found lockstep elsewhere than in the prefix: $(grep '^lockstep_DIR' "$work/consumer/CMakeCache.txt")"
"$lockstep" serve --port 0 2>"$work/serve.log" &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$work/serve.log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || fail "the installed lockstep serve did not start: $(cat "$work/serve.log")"
out=$("$work/consumer/consumer" 127.0.0.1 "$port") || fail "the consumer exited $?: $out"
[[ $out =~ ^granted\ [0-9]+$ ]] || fail "the consumer printed '$out'"
echo "consumer: $out, then released"
echo ok
