#!/usr/bin/env bash
# A command that must fail in one stated way: it must exit with EXIT_CODE
# and print a line matching REGEX (grep -E, over stdout and stderr). Bug
# tests use it instead of CTest's WILL_FAIL, which also passes on a usage
# error or a crash, and instead of a bare PASS_REGULAR_EXPRESSION, which
# ignores the exit code.
# usage: expect.sh EXIT_CODE REGEX COMMAND [ARG...]
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: expect.sh EXIT_CODE REGEX COMMAND [ARG...]" >&2
  exit 2
fi
want=$1 regex=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
got=$?
cat "$out"
if [ "$got" -ne "$want" ]; then
  echo "FAIL: exit $got, expected $want"
  exit 1
fi
if ! grep -Eq -- "$regex" "$out"; then
  echo "FAIL: no line matches: $regex"
  exit 1
fi
echo "ok: exit $got and a line matching: $regex"
