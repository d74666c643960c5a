#!/usr/bin/env python3
"""Every command the documents show, run (docs.readme_commands).

The documents are what a user copies from, so each of their commands must
work as written. This reads README.md, spec/README.md and every docs/*.md
and:

- runs every line of every fenced command block (fenced with no language or
  as `bash`), exactly as written but for this build's lockstep for
  `build/default/lockstep`, a free port for 7878, the repository's
  `tests/vectors` and `spec` for those relative paths, files written under
  the work folder (also for /tmp/...), and `your-server` (the placeholder for
  the reader's server) replaced by `lockstep serve`. Durations are not
  shortened: a document's example must be quick as written. The work folder
  starts empty, and the system folders a command names (/var/lib/lockstep)
  are moved into a fresh root in it that holds nothing either, as on a fresh
  machine: a command that needs a folder the document does not make (with
  `mkdir -p`, which is run too) fails. A line ending in `&` is a server
  started for the lines after it; a server started in the foreground is
  checked to answer a request and to stop cleanly on SIGTERM. Every command
  must exit 0, or the code a trailing `# exits N` comment states. A `fuzz`
  run the machine itself ran late (half the tolerance or more) is made
  again as written, three times at most, and then the test is reported
  skipped (77), never passed.
- skips blocks fenced as one of NOT_RUN (printed output, file contents, CI
  configurations, cron lines, library code compiled by docs.readme_snippets);
  a block fenced with any other language fails the test. It also skips
  blocks preceded by `<!-- covered-by: TEST -->`, whose commands another
  CTest test runs as written (that test must exist), and blocks preceded by
  `<!-- not-run: REASON -->`, for what CTest cannot give (the reader's own
  server or service); the reasons are printed.
- checks that build steps (`bash scripts/setup.sh`, `cmake --preset X`,
  `cmake --build --preset X`) appear verbatim in .ci/run or in a test
  script that runs them (tests/**/*.sh), and that the labels a `ctest -L`
  line names exist and a `ctest -R` regex matches some test (ctest lines
  are not run here: they are the suite this test is part of).
- runs `--help` of every subcommand any `lockstep ...` span of the
  documents names (the command reference, the prose), so a renamed
  subcommand cannot linger in the documentation.

A command line of a kind this script does not know fails the test: a new
documented command is run here, or marked with the test that runs it.

usage: readme_commands.py LOCKSTEP SOURCE_DIR WORK_DIR
"""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

LOCKSTEP, SOURCE, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
# The fences whose blocks are not commands to run, and why.
NOT_RUN = {
    "text": "printed output, file contents, lines for another program",
    "yaml": "a CI system's configuration",
    "cpp": "library code, compiled by docs.readme_snippets",
}
RUN = ("", "bash")
# A real-time fuzzing run the machine itself ran late (the fuzzer, or the
# target's answer to a release, later than half the tolerance) judges the
# machine, not the command: it is made again as written, this many times
# at most, and then reported skipped (exit 77), never passed.
REAL_TIME_ATTEMPTS = 3
late_runs = []
# Where the system folders the documents name are, for this test: nothing is
# made in it but what the documents' commands make.
FRESH_ROOT = os.path.join(WORK, "fresh-root")
failures = []
ran = 0
where = ""  # the document being read, for the messages


def documents():
    docs = os.path.join(SOURCE, "docs")
    return ["README.md", "spec/README.md"] + sorted(
        "docs/" + name for name in os.listdir(docs) if name.endswith(".md"))


def fail(message):
    message = f"{where}: {message}"
    failures.append(message)
    print("FAIL: " + message, flush=True)


def machine_late(words, output):
    """How late the machine ran a `fuzz` run, in ms, when that is half its
    tolerance or more (the lines every fuzz summary prints); else None."""
    if words[1:2] != ["fuzz"]:
        return None
    tolerance = float(words[words.index("--tolerance-ms") + 1]) if "--tolerance-ms" in words else 50.0
    found = [float(x) for x in re.findall(r"^tester: the fuzzer itself ran at most ([\d.]+) ms late", output, re.M)]
    found += [float(x) for x in re.findall(r"^target: slowest answer to a release ([\d.]+) ms", output, re.M)]
    late = max(found, default=0.0)
    return late if late * 2 >= tolerance else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def blocks(text):
    """(language, marker, lines) of each fenced block; marker is the
    (kind, argument) of the covered-by or not-run comment among the
    comments right above it, if any."""
    result, lines = [], text.split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        marker, j = None, i - 1
        while j >= 0 and (not lines[j].strip() or lines[j].startswith("<!--")):
            found = re.match(r"<!-- (covered-by|not-run): (.+?) -->", lines[j])
            if found and not marker:
                marker = (found.group(1), found.group(2))
            j -= 1
        body, i = [], i + 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        result.append((fence.group(1), marker, body))
        i += 1
    return result


def logical_lines(body):
    """Joins backslash continuations; drops blank lines and comments."""
    out, pending = [], ""
    for line in body:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        expected = re.search(r"\s#\s.*\bexits (\d+)\b", line)
        line = re.sub(r"\s+#\s.*$", "", line)  # a trailing comment
        if line and not line.startswith("#"):
            out.append((line, int(expected.group(1)) if expected else 0))
    return out


def localize(command, port):
    """The documented command with this build, a free port and the work folder."""
    command = command.replace("your-server", "build/default/lockstep serve --quiet")
    command = command.replace("build/default/lockstep", LOCKSTEP)
    command = command.replace("7878", str(port))
    command = command.replace("/var/lib/lockstep", FRESH_ROOT + "/var/lib/lockstep")
    command = re.sub(r"(^|\s)(tests/vectors|spec/)", lambda m: m.group(1) + os.path.join(SOURCE, m.group(2)), command)
    command = re.sub(r"(^|\s)/tmp/", lambda m: m.group(1) + os.path.join(WORK, "tmp") + "/", command)
    return command


def run_foreground(command, port, cwd, request, expected, what):
    """A server the README starts in the foreground: it must listen on
    `port`, answer `request` with a first line holding `expected`, and stop
    with exit 0 on SIGTERM."""
    process = subprocess.Popen("exec " + command, shell=True, cwd=cwd, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if not wait_for_port(port, process):
            fail(f"{command}: never listened on {port}")
            return
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(request)
            answer = s.makefile().readline().strip()
        if expected not in answer:
            fail(f"{command}: answered {answer!r} to {what}")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            code = process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            code = process.wait()
    if code != 0:
        fail(f"{command}: exit {code} on SIGTERM, expected 0")


def run_foreground_server(command, port):
    run_foreground(command, port, WORK, b"A readme-key readme-owner 1000 0\n", "A ", "a free key's acquire")


def run_page_server(command):
    """`lockstep playground` serves the page the web preset built (the test
    requires the web_page fixture) from the repository's root."""
    page_port = free_port()
    command = command.replace("playground", f"playground --port {page_port}", 1)
    run_foreground(command, page_port, SOURCE, b"GET / HTTP/1.0\r\n\r\n", " 200 ", "GET /")


BUILD_STEP = re.compile(r"^(bash scripts/setup\.sh|cmake --preset \w+|cmake --build --preset \w+)$")
CTEST = re.compile(r"^(\w+=\S+ )*ctest( .*)?$")


def run_block(lines, where_run, labels, tests):
    global ran
    port = free_port()
    background = []
    try:
        for line, expected in lines:
            parts = [p.strip() for p in line.split("&&")]
            for part in parts:
                if BUILD_STEP.match(part):
                    if part not in where_run:
                        fail(f"build step `{part}` is run neither by .ci/run nor by a test script")
                    continue
                if CTEST.match(part):
                    for label in re.findall(r"-L (\S+)", part):
                        if label not in labels:
                            fail(f"`{part}`: no test has the label {label}")
                    for regex in re.findall(r"-R (\S+)", part):
                        if not any(re.search(regex, name) for name in tests):
                            fail(f"`{part}`: no test's name matches {regex}")
                    continue
                if part.startswith("mkdir -p "):
                    os.makedirs(os.path.join(WORK, "tmp"), exist_ok=True)
                    subprocess.run(localize(part, port), shell=True, cwd=WORK, check=False)
                    continue
                if not part.startswith("build/default/lockstep"):
                    fail(f"`{part}`: a command this test does not know how to run; run it here, or put "
                         f"<!-- covered-by: TEST --> above its block")
                    continue
                command = localize(part, port)
                ran += 1
                print(f"$ {command}", flush=True)
                if command.endswith("&"):
                    process = subprocess.Popen("exec " + command[:-1], shell=True, cwd=WORK, start_new_session=True,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    background.append(process)
                    if not wait_for_port(port, process):
                        fail(f"{command}: never listened on {port}")
                    continue
                words = shlex.split(command)
                if words[1:2] == ["serve"]:
                    run_foreground_server(command, port)
                    continue
                if words[1:2] == ["playground"]:
                    run_page_server(command)
                    continue
                for attempt in range(1, REAL_TIME_ATTEMPTS + 1):
                    started = time.time()
                    done = subprocess.run(command, shell=True, cwd=WORK, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True, timeout=600)
                    tail = "\n".join(done.stdout.strip().split("\n")[-3:])
                    print(f"  exit {done.returncode} after {time.time() - started:.1f} s\n  {tail}", flush=True)
                    late = machine_late(words, done.stdout)
                    if done.returncode == expected or late is None:
                        break
                    print(f"  the machine ran {late:.1f} ms late, half the tolerance or more: run {attempt} of "
                          f"{REAL_TIME_ATTEMPTS} judges the machine", flush=True)
                if done.returncode != expected and late is not None:
                    late_runs.append(f"{where}: {command}")
                elif done.returncode != expected:
                    fail(f"{command}: exit {done.returncode}, expected {expected}:\n{done.stdout[-2000:]}")
    finally:
        for process in background:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def test_sources():
    """The names of the tests, their labels, and the text of the scripts
    that run commands (.ci/run and tests/**/*.sh)."""
    names, labels = set(), set()
    with open(os.path.join(SOURCE, ".ci/run")) as f:
        scripts = f.read()
    for root, _, files in os.walk(os.path.join(SOURCE, "tests")):
        for name in files:
            with open(os.path.join(root, name), errors="replace") as f:
                content = f.read()
            if name == "CMakeLists.txt":
                names.update(re.findall(r"add_test\(NAME ([\w.\-${}]+)", content))
                for found in re.findall(r"LABELS\s+\"?([\w;\-]+)", content):
                    labels.update(found.split(";"))
            elif name.endswith(".sh"):
                scripts += content
    return names, labels, scripts


def covered(name, tests):
    """Whether a test of that name is added; `${...}` in an added name (a
    test per config or per bug) stands for any word."""
    for test in tests:
        pattern = re.escape(test)
        pattern = re.sub(r"\\\$\\\{[^}]*\\\}", r"[\\w\\-]+", pattern)
        if re.fullmatch(pattern, name):
            return True
    return False


def main():
    global where
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(os.path.join(WORK, "tmp"))
    tests, labels, where_run = test_sources()
    text_of = {}
    for document in documents():
        where = document
        with open(os.path.join(SOURCE, document)) as f:
            text = text_of[document] = f.read()
        for language, marker, body in blocks(text):
            if language in NOT_RUN:
                continue
            if language not in RUN:
                fail(f"a block fenced `{language}`: fence commands with nothing or `bash`, and other text with "
                     f"one of {', '.join(sorted(NOT_RUN))}")
                continue
            if marker and marker[0] == "covered-by":
                if not covered(marker[1], tests):
                    fail(f"covered-by names {marker[1]}, which no tests/**/CMakeLists.txt adds")
                continue
            if marker:
                print(f"{document}: not run, {marker[1]}: {body[0] if body else ''}", flush=True)
                continue
            run_block(logical_lines(body), where_run, labels, tests)
    # Every subcommand a `lockstep ...` span names answers --help.
    paths = {}
    for document, text in text_of.items():
        for span in re.findall(r"`lockstep ([^`]*)`", text):
            words = []
            for word in span.split():
                if not re.fullmatch(r"[a-z][a-z\-]*", word):
                    break
                words.append(word)
            paths.setdefault(tuple(words[:2]), document)
    helped = 0
    for path, document in sorted(paths.items()):
        where = document
        # The longest prefix of the span's words that is a subcommand: its
        # --help opens with its own usage line (`Usage: ... lockstep sim
        # [OPTIONS]`); a word that is not one falls back to its parent's.
        found = ()
        for length in range(len(path), 0, -1):
            done = subprocess.run([LOCKSTEP, *path[:length], "--help"], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            usage = re.search(r"^Usage: \S*lockstep((?: [a-z][a-z\-]*)*) \[OPTIONS\]", done.stdout, re.M)
            if done.returncode == 0 and usage and tuple(usage.group(1).split()) == path[:length]:
                found = path[:length]
                break
        if path and not found:
            fail(f"`lockstep {' '.join(path)}` is named, but `{path[0]}` is no subcommand")
        helped += 1
    print(f"{len(text_of)} documents: {ran} commands run, {helped} subcommands' --help checked, "
          f"{len(failures)} failed, {len(late_runs)} judging the machine")
    if failures:
        sys.exit(1)
    if late_runs:
        print("SKIPPED: the machine ran these late in every attempt:\n  " + "\n  ".join(late_runs))
        sys.exit(77)
    sys.exit(0)


main()
