#!/usr/bin/env python3
"""The longest silences of a target in a recorded history.

A silence is a time during which a release was sent and not yet answered
(a release is answered at once, R or N), and no response arrived on any
connection (the tester kept finding every connection empty: after_us). A server that was not
scheduled shows as a silence as long as its stall, with every answer it owed
arriving in one burst at the end; a late timer alone does not. Used by
stress.sh to tell, for a run that did not conform, whether the target was
stalled.
usage: stalls.py HISTORY [COUNT]
"""
import json
import sys


def silences(path):
    """Silences while a release was waiting for its answer: a release is
    answered at once (R or N), so a server that runs answers it within a
    round trip, whatever the state of its keys."""
    lines = open(path, encoding="utf-8").read().splitlines()
    pending = {}  # connection -> releases sent and not yet answered R or N
    quiet_since = None  # the last arrival (or the first release sent after one)
    found = []
    for text in lines[1:]:
        event = json.loads(text)
        kind, t = event["ev"], event["t_us"]
        line = event.get("line", "")
        fields = line.split(" ")
        well_formed_release = len(fields) == 3 and fields[0] == "R" and fields[2].isdigit() and fields[2] != "0"
        if kind == "send" and well_formed_release:
            if not any(pending.values()):
                quiet_since = t if quiet_since is None else max(quiet_since, t)
            pending[event["conn"]] = pending.get(event["conn"], 0) + 1
        elif kind == "recv":
            arrived = event.get("after_us", t)
            if any(pending.values()) and quiet_since is not None and arrived > quiet_since:
                found.append((arrived - quiet_since, quiet_since, arrived))
            quiet_since = t
            if line[:2] in ("R ", "N "):
                pending[event["conn"]] = max(0, pending.get(event["conn"], 0) - 1)
        elif kind in ("close", "eof"):
            pending.pop(event["conn"], None)
        elif kind == "down":
            pending.clear()
    origin = json.loads(lines[1])["t_us"] if len(lines) > 1 else 0
    return sorted(found, reverse=True), origin


def main():
    path = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    found, origin = silences(path)
    for gap, start, end in found[:count]:
        print(f"longest silence with a release unanswered: {gap / 1000:.1f} ms, from +{(start - origin) / 1000:.3f} ms "
              f"to +{(end - origin) / 1000:.3f} ms")
    if not found:
        print("longest silence with a release unanswered: none")


main()
