#!/usr/bin/env python3
"""Splits a lockstep history (lockstep.history/1, NDJSON) into one history per
key: the header, every connect/close/eof/down/up/nemesis event, and the sends
and receives that name that key. A key's history is a sub-history of the
whole (what its requests saw, with the others left out), so a verdict on it
holds for that key alone, without the properties that span keys (tokens
increasing across keys). Used to look past a cross-key finding at what each
key's own history says.

Sends that are not well-formed requests (their answer, an E, names no key)
are left out with it.

usage: history_by_key.py HISTORY OUT_DIR   (writes OUT_DIR/NNN-<key>.ndjson; prints "FILE KEY" per key)
"""
import json
import os
import sys


def key_of(event):
    fields = event["line"].split(" ")
    if event["ev"] == "send":
        # A <key> <owner> <lease_ms> <wait_ms> [<client> <seq>]  or  R <key> <token> [<client> <seq>]
        well_formed = (fields[0] == "A" and len(fields) in (5, 7)) or (fields[0] == "R" and len(fields) in (3, 5))
        return fields[1] if well_formed else None
    # A <token> <owner> <key>, T|B <owner> <key>, R|N <token> <key>; E names no key
    return fields[-1] if fields[0] in ("A", "T", "B", "R", "N") and len(fields) >= 3 else None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    path, out_dir = sys.argv[1], sys.argv[2]
    with open(path) as f:
        lines = f.read().splitlines()
    header, events = lines[0], [json.loads(line) for line in lines[1:]]
    keys = sorted({key_of(e) for e in events if e["ev"] in ("send", "recv")} - {None})
    os.makedirs(out_dir, exist_ok=True)
    for index, key in enumerate(keys):
        kept = [header] + [json.dumps(e) for e in events if e["ev"] not in ("send", "recv") or key_of(e) == key]
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)[:60]
        name = os.path.join(out_dir, f"{index:03d}-{safe}.ndjson")
        with open(name, "w") as f:
            f.write("\n".join(kept) + "\n")
        print(name, key)


if __name__ == "__main__":
    main()
