#!/usr/bin/env python3
"""The dependency rule of the README's map of the folders, held (docs.layers).

Each top-level folder of the code may include only from the folders listed
for it below, which is the README's "Dependencies point one way" sentence
as a table. This reads every `#include "folder/..."` of every C++ file and
fails on each one the table does not allow, naming the file and line, and
on a cycle in the table itself. A new folder must be added here (and to the
README) before any file includes from it.

usage: layers.py SOURCE_DIR
"""
import pathlib
import re
import sys

# folder -> the folders its files may include from (besides its own).
ALLOWED = {
    "impl": set(),
    "markup": set(),
    "cli": set(),
    "model": {"impl"},
    "check": {"model", "impl"},
    "report": {"check", "model", "markup"},
    "sim": {"check", "model", "impl", "markup"},
    "drivers": {"impl"},
    "client": {"impl"},
    "live": {"sim", "report", "check", "model", "drivers", "client", "cli", "impl"},
    "runs": {"live", "sim", "check", "model", "cli", "impl"},
    "web": {"sim", "model", "impl"},
    "adapters": {"drivers", "cli", "impl"},
    "cmd": {"runs", "live", "web", "sim", "drivers", "cli", "impl"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([a-z_]+)/')


def acyclic(table):
    state = {}

    def visit(node, path):
        if state.get(node) == "done":
            return None
        if state.get(node) == "open":
            return path + [node]
        state[node] = "open"
        for dep in sorted(table[node]):
            cycle = visit(dep, path + [node])
            if cycle:
                return cycle
        state[node] = "done"
        return None

    for node in sorted(table):
        cycle = visit(node, [])
        if cycle:
            return cycle
    return None


def main():
    root = pathlib.Path(sys.argv[1])
    failures = []
    cycle = acyclic(ALLOWED)
    if cycle:
        failures.append("the table has a cycle: " + " -> ".join(cycle))
    files = 0
    for folder, allowed in sorted(ALLOWED.items()):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cpp", ".hpp") or not path.is_file():
                continue
            files += 1
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                if target == folder or target in allowed:
                    continue
                if target not in ALLOWED:
                    # Not a folder of the project (a generated or system
                    # header under a subfolder name): only the project's
                    # folders are ruled.
                    if (root / target).is_dir():
                        failures.append(f"{path.relative_to(root)}:{number}: includes {target}/, a folder the table "
                                        "does not know")
                    continue
                failures.append(f"{path.relative_to(root)}:{number}: {folder}/ includes {target}/, "
                                f"which it may not (it may include {', '.join(sorted(allowed)) or 'nothing'})")
    if files == 0:
        failures.append("no C++ file read: is SOURCE_DIR the project's root?")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print(f"PASS: {files} files of {len(ALLOWED)} folders include only down the map")
    return 0


if __name__ == "__main__":
    sys.exit(main())
