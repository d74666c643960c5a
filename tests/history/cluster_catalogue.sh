#!/usr/bin/env bash
# The cluster catalogue that CMake read from impl/cluster/bugs.cpp (and gave
# a fuzz.cluster.bug test per bug black-box can see) is the one
# `serve --cluster --list-bugs` lists, and the bugs not held are printed
# with the reason.
#   cluster_catalogue.sh LOCKSTEP "NAME;NAME;..." [NAME=REASON]...
set -uo pipefail
lockstep=$1 read_names=$2
shift 2
listed=$("$lockstep" serve --cluster --list-bugs 2>&1 | awk '{print $1}' | sort | tr '\n' ' ')
read=$(tr ';' '\n' <<<"$read_names" | sort | tr '\n' ' ')
[ "$listed" = "$read" ] || { echo "serve --cluster --list-bugs lists '$listed'; CMake read '$read'"; exit 1; }
echo "cluster catalogue: $listed"
for entry in "$@"; do echo "not held: ${entry%%=*}: ${entry#*=}"; done
