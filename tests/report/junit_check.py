#!/usr/bin/env python3
"""Checks a JUnit XML file the way a CI system reads it: it must parse, and
each <testsuite>'s tests/failures/errors/skipped attributes must equal the
<testcase>, <failure>, <error> and <skipped> elements it holds. Prints the
totals as `tests=N failures=N errors=N skipped=N`; with --expect K=V (or
K>=V) for those names, exits 1 unless each holds.

usage: junit_check.py FILE [--expect tests=3 --expect failures>=1 ...]"""
import re
import sys
import xml.dom.minidom


def main(argv):
    path, expectations = argv[1], []
    rest = argv[2:]
    while rest:
        if rest[0] != "--expect" or len(rest) < 2:
            sys.exit(f"usage: {argv[0]} FILE [--expect NAME=N | NAME>=N]...")
        match = re.fullmatch(r"(tests|failures|errors|skipped)(=|>=)(\d+)", rest[1])
        if not match:
            sys.exit(f"bad expectation {rest[1]!r}")
        expectations.append((match[1], match[2], int(match[3])))
        rest = rest[2:]
    try:
        document = xml.dom.minidom.parse(path)
    except Exception as error:  # expat's ExpatError, or the file is missing
        print(f"FAIL: {path} is not well-formed XML: {error}")
        return 1
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    suites = document.getElementsByTagName("testsuite")
    if not suites:
        print(f"FAIL: {path} has no <testsuite>")
        return 1
    for suite in suites:
        cases = suite.getElementsByTagName("testcase")
        counted = {
            "tests": len(cases),
            "failures": sum(len(c.getElementsByTagName("failure")) for c in cases),
            "errors": sum(len(c.getElementsByTagName("error")) for c in cases),
            "skipped": sum(len(c.getElementsByTagName("skipped")) for c in cases),
        }
        for name, value in counted.items():
            stated = suite.getAttribute(name)
            if stated == "" and name == "skipped" and value == 0:
                continue  # optional when there is nothing to count
            if stated != str(value):
                print(f"FAIL: testsuite {suite.getAttribute('name')!r} says {name}=\"{stated}\" but holds {value}")
                return 1
            totals[name] += value
        for case in cases:
            if not case.getAttribute("name") or not case.getAttribute("classname"):
                print("FAIL: a <testcase> without name or classname")
                return 1
            for failure in case.getElementsByTagName("failure"):
                if not failure.getAttribute("message"):
                    print(f"FAIL: the failure of {case.getAttribute('name')!r} has no message")
                    return 1
    print(" ".join(f"{name}={value}" for name, value in totals.items()))
    for name, op, value in expectations:
        if (totals[name] != value) if op == "=" else (totals[name] < value):
            print(f"FAIL: expected {name}{op}{value}, got {totals[name]}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
