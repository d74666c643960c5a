#!/usr/bin/env bash
# Every placeholder a command template is filled with is listed where a user
# reads about the template: in `--help` of the command that takes it and in
# docs/testing-your-server.md. The placeholders are read from the code that fills them
# (live/process.cpp's template_values, and the `values["name"]` each tool
# adds), so a placeholder added there and not documented fails here.
#
# usage: template_placeholders.sh LOCKSTEP SOURCE_DIR
set -uo pipefail
lockstep=$1 source_dir=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The placeholders every template gets: {"name", ...} pairs of template_values.
common=$(sed -n '/^std::map<std::string, std::string> template_values/,/^}/p' "$source_dir/live/process.cpp" |
         grep -o '{"[a-z_]*"' | tr -d '{"')
[ "$(echo "$common" | grep -c .)" -ge 8 ] || fail "template_values not found in live/process.cpp: '$common'"
# What one tool adds, from the file that fills its template.
added() { grep -o 'values\["[a-z_]*"\]' "$source_dir/live/$1" | sed 's/values\["\(.*\)"\]/\1/' | sort -u; }

# check HELP_COMMAND FILE...: each placeholder the files fill is in that --help.
check() {
  local command=$1
  shift
  local help names
  help=$("$lockstep" $command --help 2>&1)
  names=$( (echo "$common"; for file in "$@"; do added "$file"; done) | sort -u)
  for name in $names; do
    [[ "$help" == *"{$name}"* ]] || fail "lockstep $command --help does not list {$name}"
    grep -qF "{$name}" "$source_dir/docs/testing-your-server.md" || fail "docs/testing-your-server.md does not list {$name}"
  done
  echo "lockstep $command --help: $(echo "$names" | tr '\n' ' ')"
}
check conform live_runner.cpp
check fuzz fuzz.cpp lock_cluster.cpp

[ "$failures" -eq 0 ] && echo "every placeholder listed"
[ "$failures" -eq 0 ]
