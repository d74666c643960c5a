#!/usr/bin/env python3
"""Every command the README documents, run (docs.readme_commands).

The README is what a user copies from, so each of its commands must work as
written. This reads README.md and:

- runs every line of every fenced command block, with this build's lockstep
  for `build/default/lockstep`, a free port for 7878, files written under the
  work folder, fuzzing runs of at most 5 s, and `your-server` (the
  placeholder for the reader's server) replaced by `lockstep serve`. The
  work folder starts empty, and the system folders a command names
  (/var/lib/lockstep) are moved into a fresh root in it that holds nothing
  either, as on a fresh machine: a command that needs a folder the README
  does not make (with `mkdir -p`, which is run too) fails. A line
  ending in `&` is a server started for the lines after it; a server started
  in the foreground is checked to answer a request and to stop cleanly on
  SIGTERM. Every command must exit 0.
- skips blocks fenced as `text` (printed output) or `cpp` (library code,
  compiled by the tests), and blocks preceded by `<!-- covered-by: TEST -->`,
  whose commands another CTest test runs as written; that test must exist.
- checks that build steps (`bash scripts/setup.sh`, `cmake --preset X`,
  `cmake --build --preset X`) appear verbatim in .ci/run or in a test
  script that runs them (tests/**/*.sh), and that the labels a `ctest -L`
  line names exist.
- runs `--help` of every subcommand any `lockstep ...` span of the README
  names (the CLI table, the prose), so a renamed subcommand cannot linger in
  the documentation.

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
README = os.path.join(SOURCE, "README.md")
FUZZ_SECONDS_MAX = 5
# Where the system folders the README names are, for this test: nothing is
# made in it but what the README's commands make.
FRESH_ROOT = os.path.join(WORK, "fresh-root")
failures = []
ran = 0


def fail(message):
    failures.append(message)
    print("FAIL: " + message, flush=True)


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
    covered-by comment right above it, if any."""
    result, lines = [], text.split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = re.match(r"<!-- covered-by: ([\w.\-]+) -->", above)
        body, i = [], i + 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        result.append((fence.group(1), marker.group(1) if marker else None, body))
        i += 1
    return result


def logical_lines(body):
    """Joins backslash continuations; drops blank lines and comments."""
    out, pending = [], ""
    for line in body:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = re.sub(r"\s+#\s.*$", "", (pending + line).strip())  # a trailing comment
        pending = ""
        if line and not line.startswith("#"):
            out.append(line)
    return out


def localize(command, port):
    """The documented command with this build, a free port and the work folder."""
    command = command.replace("your-server", "build/default/lockstep serve --quiet")
    command = command.replace("build/default/lockstep", LOCKSTEP)
    command = command.replace("7878", str(port))
    command = command.replace("/var/lib/lockstep", FRESH_ROOT + "/var/lib/lockstep")
    command = re.sub(r"--duration-s (\d+)",
                     lambda m: f"--duration-s {min(int(m.group(1)), FUZZ_SECONDS_MAX)}", command)
    command = re.sub(r"(^|\s)tests/vectors", lambda m: m.group(1) + os.path.join(SOURCE, "tests/vectors"), command)
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


def run_block(lines, where_run, labels):
    global ran
    port = free_port()
    background = []
    try:
        for line in lines:
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
                    continue
                if part.startswith("mkdir -p "):
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
                started = time.time()
                done = subprocess.run(command, shell=True, cwd=WORK, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, timeout=600)
                tail = "\n".join(done.stdout.strip().split("\n")[-3:])
                print(f"  exit {done.returncode} after {time.time() - started:.1f} s\n  {tail}", flush=True)
                if done.returncode != 0:
                    fail(f"{command}: exit {done.returncode}:\n{done.stdout[-2000:]}")
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


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    with open(README) as f:
        text = f.read()
    tests, labels, where_run = test_sources()
    for language, marker, body in blocks(text):
        if language in ("text", "cpp"):
            continue
        if marker:
            if marker not in tests:
                fail(f"covered-by names {marker}, which no tests/**/CMakeLists.txt adds")
            continue
        run_block(logical_lines(body), where_run, labels)
    # Every subcommand a `lockstep ...` span names answers --help.
    paths = set()
    for span in re.findall(r"`lockstep ([^`]*)`", text):
        words = []
        for word in span.split():
            if not re.fullmatch(r"[a-z][a-z\-]*", word):
                break
            words.append(word)
        paths.add(tuple(words[:2]))
    helped = 0
    for path in sorted(paths):
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
            fail(f"`lockstep {' '.join(path)}` is named by the README, but `{path[0]}` is no subcommand")
        helped += 1
    print(f"README: {ran} commands run, {helped} subcommands' --help checked, {len(failures)} failed")
    sys.exit(1 if failures else 0)


main()
