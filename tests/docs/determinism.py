#!/usr/bin/env python3
"""The determinism rule of the README's map of the folders, held (docs.determinism).

Nothing in impl/, model/ or sim/ reads a clock, draws randomness other than
impl/prng.hpp's seeded generators, reads the environment or starts a thread:
the same seed must give the same bytes. This reads every C++ file of those
folders, with comments and string literals blanked, and fails on each use of
an API that would break the rule, naming the file and line. What needs such
an API belongs in drivers/ (or live/, cmd/), which hand the cores the time.

Iteration order of unordered containers cannot be seen this way; the
simulator's --check-determinism tests cover it by running seeds twice.

usage: determinism.py SOURCE_DIR
"""
import pathlib
import re
import sys

FORBIDDEN = [
    (r"\b(steady_clock|system_clock|high_resolution_clock|utc_clock|file_clock)\b", "a clock"),
    (r"\b(clock_gettime|gettimeofday|timespec_get)\s*\(", "a clock"),
    (r"(?<![\w.>])(std::|::)?time\s*\(\s*(nullptr|NULL|0|&\w+)\s*\)", "a clock"),
    (r"(std::|::)clock\s*\(\s*\)", "a clock"),
    (r"\b(std::thread|std::jthread|std::async|pthread_create)\b", "a thread"),
    (r"#\s*include\s*<(thread|future|random|ctime|time\.h|sys/time\.h|pthread\.h)>",
     "a header of clocks, threads or randomness"),
    (r"\b(random_device|mt19937(_64)?|default_random_engine|minstd_rand)\b", "randomness outside impl/prng.hpp"),
    (r"(?<![\w.>:])(std::)?s?rand\s*\(|(?<![\w:])::s?rand\s*\(", "randomness outside impl/prng.hpp"),
    (r"\b(getenv|secure_getenv)\s*\(", "the environment"),
]


def code_only(text):
    """The text with comments and string and character literals blanked,
    newlines kept, so that prose about a clock is not taken for a call."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and re.match(r'R"([^(\s]*)\(', text[i:]):
            delimiter = re.match(r'R"([^(\s]*)\(', text[i:]).group(1)
            end = text.find(")" + delimiter + '"', i)
            j = n if end < 0 else end + len(delimiter) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main():
    source = pathlib.Path(sys.argv[1])
    findings, files = [], 0
    for folder in ("impl", "model", "sim"):
        for path in sorted((source / folder).rglob("*")):
            if path.suffix not in (".cpp", ".hpp", ".h", ".cc", ".in"):
                continue
            files += 1
            for number, line in enumerate(code_only(path.read_text(errors="replace")).splitlines(), 1):
                if line.lstrip().startswith("#") and "include" not in line:
                    continue
                for pattern, what in FORBIDDEN:
                    if re.search(pattern, line):
                        findings.append(f"{path.relative_to(source)}:{number}: {what}: {line.strip()}")
    for finding in findings:
        print("FAIL:", finding)
    if files == 0:
        print("FAIL: no C++ file found under impl/, model/ or sim/ of", source)
        return 1
    if findings:
        print(f"{len(findings)} use(s) of clocks, threads, randomness or the environment in the deterministic folders")
        return 1
    print(f"PASS: {files} files of impl/, model/ and sim/ read no clock, start no thread, draw no randomness "
          "of their own and read no environment")
    return 0


if __name__ == "__main__":
    sys.exit(main())
