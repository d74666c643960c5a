#!/usr/bin/env python3
"""The playground page in headless Chromium, driven through its own controls.

The page is served by the real `lockstep playground`, and Chromium is driven
over its DevTools pipe (--remote-debugging-pipe: no port, no extra package).
Clicks are mouse events at the control's place, requests are typed with key
events, and what is checked is the text of the DOM. Expected responses always
come from the vector files, read and matched here with the format's own rules
($name binding, bare E, multisets per instant), never from the page.

Scenarios (one CTest test each):
  corpus-simple   every simple-mode vector of tests/vectors/, replayed by
                  typing its requests into the columns, closing columns and
                  stepping the clock; the engine's responses the columns show
                  must match the expect lines, instant by instant, and
                  nothing may be shown at an instant the vector does not name.
  corpus-cluster  the same for every mode=cluster vector, on the cluster lane.
  examples        each guided example, told with the Next button: the three
                  correct ones end with every expect held, their responses
                  match the file and their narration is shown; the LIFO one
                  stops at the expect line that gives the printer to bob, and
                  the highlighted divergence is the engine's grant to carol
                  against the model's to bob, with the bug's story (as
                  `lockstep serve --list-bugs` tells it). Saves the
                  screenshot playground.png in the work folder.
  manual-bug      the bug chosen in the page's select; a FIFO vector replayed
                  by hand makes the divergence appear at its first release.
  export          a session through the controls (typed and prepared
                  requests, the clock by steps and to the next due instant, a
                  close, a malformed line), exported with the Export button:
                  `lockstep conform` passes the file on the engine and the
                  model, and fails it with the LIFO bug.

Exit codes: 0 passed, 1 failed, 77 skipped (no chromium, or no page and no
emscripten to build one).
"""
import argparse
import base64
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import time

SKIP = 77


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


# --- the vector format, read here on its own ------------------------------

class Vector:
    def __init__(self, path):
        self.path = pathlib.Path(path)
        self.text = self.path.read_text(encoding="utf-8")
        self.config = ""
        self.steps = []  # (kind, time, connection, text, line number)
        self.end = None
        for number, raw in enumerate(self.text.split("\n"), start=1):
            line = strip_comment(raw).strip(" \t\r")
            if not line:
                continue
            directive, _, rest = line.partition(" ")
            if directive == "config":
                self.config = rest
                continue
            if directive == "order":
                # The order of one instant's tokens: the page's own parser
                # judges it; nothing here is driven by it.
                continue
            time_text, _, rest = rest.partition(" ")
            if directive == "end":
                self.end = int(time_text)
                self.steps.append(("end", int(time_text), None, None, number))
                continue
            connection, _, text = rest.partition(" ")
            self.steps.append((directive, int(time_text), connection, text, number))
        self.mode = "cluster" if "mode=cluster" in self.config.split() else "simple"

    def instants(self):
        return sorted({step[1] for step in self.steps})

    def expects_at(self, instant):
        return [(s[2], s[3], s[4]) for s in self.steps if s[0] == "expect" and s[1] == instant]


def strip_comment(line):
    for i, c in enumerate(line):
        if c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


class Tokens:
    """$name bindings as docs/protocol.md ("Conformance vectors") says: bound once, one name per token,
    tokens bound at later instants greater than all bound before."""

    def __init__(self):
        self.bound = {}

    def substitute(self, text):
        def one(word):
            if len(word) > 1 and word[0] == "$":
                check(word[1:] in self.bound, f"{word} is not bound yet")
                return str(self.bound[word[1:]])
            return word
        return " ".join(one(w) for w in text.split(" "))

    def match_instant(self, instant, expects, shown):
        """Matches the (connection, line) pairs shown at one instant with the
        expect patterns, as multisets; binds fresh names on success."""
        if len(expects) != len(shown):
            raise Failure(f"at {instant}: expected {[e[1] for e in expects]} on {[e[0] for e in expects]}, "
                          f"the page shows {shown}")
        highest = max(self.bound.values(), default=0)

        def fits(pattern, candidate, fresh):
            connection, text, _ = pattern
            if candidate[0] != connection:
                return None
            want, got = text.split(" "), candidate[1].split(" ")
            if want == ["E"]:
                return fresh if got[0] == "E" else None
            if want[0] == "E":
                return fresh if candidate[1] == text else None
            if len(want) != len(got) or want[0] != got[0]:
                return None
            fresh = dict(fresh)
            for place, (w, g) in enumerate(zip(want, got)):
                # A token's place: second word of A, R and N.
                if place == 1 and want[0] in "ARN" and w.startswith("$") and len(w) > 1:
                    token = int(g)
                    name = w[1:]
                    if name in self.bound:
                        if self.bound[name] != token:
                            return None
                    elif name in fresh:
                        if fresh[name] != token:
                            return None
                    else:
                        if token in self.bound.values() or token in fresh.values() or token <= highest:
                            return None
                        fresh[name] = token
                elif w != g:
                    return None
            return fresh

        def search(i, used, fresh):
            if i == len(expects):
                return fresh
            for j, candidate in enumerate(shown):
                if j in used:
                    continue
                attempt = fits(expects[i], candidate, fresh)
                if attempt is not None:
                    result = search(i + 1, used | {j}, attempt)
                    if result is not None:
                        return result
            return None

        fresh = search(0, frozenset(), {})
        if fresh is None:
            raise Failure(f"at {instant}: expected {[(e[0], e[1]) for e in expects]}, the page shows {shown}")
        self.bound.update(fresh)


# --- Chromium over its DevTools pipe --------------------------------------

class Browser:
    def __init__(self, chromium, work):
        self.work = work
        commands_read, self.commands = os.pipe()
        self.events_in, events_write = os.pipe()
        self.log = open(work / "chromium.log", "wb")

        def fds():
            os.dup2(commands_read, 3)
            os.dup2(events_write, 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={work / 'profile'}", "--remote-debugging-pipe",
             "--window-size=1400,1000", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, preexec_fn=fds, pass_fds=(3, 4),
            close_fds=True)
        os.close(commands_read)
        os.close(events_write)
        self.next_id = 0
        self.replies = {}
        self.events = []
        self.condition = threading.Condition()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()
        self.session = None

    def read(self):
        buffer = b""
        while True:
            chunk = os.read(self.events_in, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while b"\0" in buffer:
                message, buffer = buffer.split(b"\0", 1)
                data = json.loads(message)
                with self.condition:
                    if "id" in data:
                        self.replies[data["id"]] = data
                    else:
                        self.events.append(data)
                    self.condition.notify_all()
        with self.condition:
            self.condition.notify_all()

    def call(self, method, params=None, session=True, timeout=60):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self.condition:
            while self.next_id not in self.replies:
                left = deadline - time.monotonic()
                check(left > 0 and self.process.poll() is None, f"no answer to {method}")
                self.condition.wait(left)
            reply = self.replies.pop(self.next_id)
        check("error" not in reply, f"{method}: {reply.get('error')}")
        return reply["result"]

    def open(self, url):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        self.call("Page.navigate", {"url": url})
        self.wait_for("document.body && document.body.dataset.ready === '1'", "the page to load its module")

    def page_errors(self):
        with self.condition:
            events = list(self.events)
        errors = []
        for event in events:
            if event.get("method") == "Runtime.exceptionThrown":
                errors.append(json.dumps(event["params"]["exceptionDetails"])[:500])
            if event.get("method") == "Log.entryAdded" and event["params"]["entry"]["level"] == "error":
                errors.append(event["params"]["entry"]["text"])
        return errors

    def eval(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        check("exceptionDetails" not in result, f"{expression}: {result.get('exceptionDetails')}")
        return result["result"].get("value")

    def wait_for(self, expression, what, timeout=30):
        deadline = time.monotonic() + timeout
        while not self.eval(f"!!({expression})"):
            check(time.monotonic() < deadline, f"timed out waiting for {what}; page errors: {self.page_errors()}")
            time.sleep(0.05)

    def click(self, selector):
        box = self.eval(f"""(() => {{
            const node = document.querySelector({json.dumps(selector)});
            if (!node) return null;
            node.scrollIntoView({{block: "center", inline: "center"}});
            const r = node.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2, node.disabled === true];
        }})()""")
        check(box is not None, f"no element {selector}")
        check(not box[2], f"{selector} is disabled")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent",
                      {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})

    def type_into(self, selector, text, enter=False):
        self.click(selector)
        # Select what the field holds, so that the typing replaces it.
        self.eval(f"document.querySelector({json.dumps(selector)}).select()")
        if text:
            self.call("Input.insertText", {"text": text})
        else:
            self.key("Backspace", 8)
        if enter:
            self.key("Enter", 13, "\r")

    def key(self, name, code, text=None):
        down = {"type": "keyDown", "key": name, "code": name, "windowsVirtualKeyCode": code}
        if text:
            down["text"] = text
        self.call("Input.dispatchKeyEvent", down)
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": name, "code": name,
                                             "windowsVirtualKeyCode": code})

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False})["data"]
        pathlib.Path(path).write_bytes(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=10)
        except Failure:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class Playground:
    """`lockstep playground --port 0` on the built page."""

    def __init__(self, lockstep, page, work):
        self.out = open(work / "playground.out", "w+")
        self.process = subprocess.Popen([lockstep, "playground", "--port", "0", "--dir", str(page)],
                                        stdout=self.out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        self.url = None
        while self.url is None:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise Failure(f"lockstep playground printed no address: {pathlib.Path(self.out.name).read_text()}")
            found = re.search(r"http://127\.0\.0\.1:\d+/", pathlib.Path(self.out.name).read_text())
            self.url = found.group(0) if found else None
            time.sleep(0.05)

    def stop(self):
        """SIGTERM, then the exit status (killed after 10 s: never left behind)."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return "killed after SIGTERM was ignored for 10 s"


# --- reading and driving the page ------------------------------------------

SHOWN = """(() => [...document.querySelectorAll('.column')].flatMap(column =>
    [...column.querySelectorAll('.entry.response')].map(entry => ({
        connection: column.dataset.connection, at: Number(entry.dataset.at), source: entry.dataset.source,
        line: entry.querySelector('.text').textContent, classes: entry.className}))))()"""


def shown(browser, source):
    return [e for e in browser.eval(SHOWN) if e["source"] == source]


def now(browser):
    return int(browser.eval("document.querySelector('#now').textContent"))


def page_error(browser):
    return browser.eval("document.querySelector('#error').textContent")


def move_clock_to(browser, instant):
    current = now(browser)
    if instant > current:
        browser.type_into("#step-ms", str(instant - current))
        browser.click("#step")
    check(now(browser) == instant, f"the clock shows {now(browser)}, not {instant}: {page_error(browser)}")


def column_selector(name):
    return f".column[data-connection={json.dumps(name)}]"


def reset(browser, config):
    browser.type_into("#config", config)
    browser.click("#reset")
    check(not page_error(browser), f"reset with '{config}': {page_error(browser)}")
    check(browser.eval("document.querySelectorAll('.column').length") == 0, "reset left columns")


def ensure_column(browser, names, vector_name):
    """The page's column for a connection of the vector: the next one the
    "+ connection" button opens, in the order the vector names them."""
    if vector_name not in names:
        before = browser.eval("[...document.querySelectorAll('.column')].map(c => c.dataset.connection)")
        browser.click("#add-connection")
        after = browser.eval("[...document.querySelectorAll('.column')].map(c => c.dataset.connection)")
        added = [name for name in after if name not in before]
        check(len(added) == 1, f"+ connection added {added}")
        names[vector_name] = added[0]
    return names[vector_name]


def replay(browser, vector, source):
    """Replays `vector` through the controls and checks what `source` shows."""
    reset(browser, vector.config)
    if vector.mode == "cluster":
        check(browser.eval("document.querySelector('#show-cluster').checked"), "mode=cluster did not show the cluster lane")
    tokens = Tokens()
    names = {}
    judged = set()
    for instant in vector.instants():
        move_clock_to(browser, instant)
        for kind, time_ms, connection, text, number in vector.steps:
            if time_ms != instant or kind not in ("at", "close"):
                continue
            column = column_selector(ensure_column(browser, names, connection))
            if kind == "at":
                browser.type_into(f"{column} input.request", tokens.substitute(text), enter=True)
                check(not page_error(browser), f"line {number}: the page refused '{text}': {page_error(browser)}")
            else:
                browser.click(f"{column} button.close")
        entries = shown(browser, source)
        by_page_name = {v: k for k, v in names.items()}
        for entry in entries:
            check(entry["at"] in vector.instants(),
                  f"{vector.path.name}: the page shows '{entry['line']}' at {entry['at']} ms, an instant the vector does not name")
        at_instant = [(by_page_name.get(e["connection"], e["connection"]), e["line"]) for e in entries if e["at"] == instant]
        try:
            tokens.match_instant(instant, vector.expects_at(instant), at_instant)
        except Failure as failure:
            raise Failure(f"{vector.path.name}: {failure}")
        judged.add(instant)
    return names


def run_story(browser, example_button):
    browser.click(f"#examples button[data-example={json.dumps(example_button)}]")
    browser.wait_for("!document.querySelector('#story').hidden", "the story to open")
    for _ in range(200):
        if browser.eval("document.querySelector('#story-status').dataset.state") != "running":
            break
        browser.click("#story-next")
    return browser.eval("document.querySelector('#story-status').dataset.state")


def list_bugs(lockstep):
    out = subprocess.run([lockstep, "serve", "--list-bugs"], capture_output=True, text=True, check=True).stdout
    return {line.split(None, 1)[0]: line.split(None, 1)[1].strip() for line in out.splitlines() if line.strip()}


# --- scenarios ---------------------------------------------------------------

def scenario_corpus(browser, args, mode):
    vectors = [Vector(p) for p in sorted(pathlib.Path(args.vectors).glob("*.vec"))]
    vectors = [v for v in vectors if v.mode == mode]
    check(len(vectors) >= 20, f"only {len(vectors)} {mode} vectors")
    source = "cluster" if mode == "cluster" else "engine"
    for vector in vectors:
        replay(browser, vector, source)
        print(f"ok {vector.path.name}: {sum(1 for s in vector.steps if s[0] == 'expect')} expect lines "
              f"shown by the page")


def scenario_examples(browser, args):
    examples = pathlib.Path(args.examples)
    for name in ("fifo-hand-off.vec", "expiry-takeover.vec", "release-expired-unswept.vec"):
        vector = Vector(examples / name)
        state = run_story(browser, name)
        status = browser.eval("document.querySelector('#story-status').textContent")
        check(state == "passed", f"{name}: the story ended {state}: {status}")
        tokens = Tokens()
        entries = shown(browser, "engine")
        for instant in vector.instants():
            tokens.match_instant(instant, vector.expects_at(instant),
                                 [(e["connection"], e["line"]) for e in entries if e["at"] == instant])
        check(all(e["at"] in vector.instants() for e in entries), f"{name}: a response at an unnamed instant")
        log = browser.eval("document.querySelector('#story-log').textContent")
        comments = [strip_comment_text(line) for line in vector.text.split("\n") if line.startswith("# ")]
        # A comment line of the file, from the middle of the story, is shown.
        sample = comments[len(comments) // 2]
        check(sample in log, f"{name}: the narration '{sample}' is not in the story log")
        passed = browser.eval("document.querySelectorAll('#story-source .passed').length")
        expect_count = sum(1 for s in vector.steps if s[0] == "expect")
        check(passed == expect_count, f"{name}: {passed} expect lines marked as held, the file has {expect_count}")
        print(f"ok {name}: told in full, {expect_count} expect lines held, narration shown")

    vector = Vector(examples / "lifo-bug-breaks-fifo.vec")
    state = run_story(browser, "lifo-bug-breaks-fifo.vec")
    check(state == "failed", f"lifo-bug-breaks-fifo.vec with its bug ended {state}, expected failed")
    check(browser.eval("document.querySelector('#bug').value") == "lifo-handoff", "the example did not choose its bug")
    # The line that fails: the expect that hands the printer to the oldest waiter.
    release = min(s[1] for s in vector.steps if s[0] == "at" and s[3].startswith("R "))
    oldest = [e for e in vector.expects_at(release) if e[1].startswith("A ")]
    check(len(oldest) == 1, "the example has one hand-off at its first release")
    failed = browser.eval("[...document.querySelectorAll('#story-source .failed')].map(l => Number(l.dataset.line))")
    check(failed == [oldest[0][2]], f"the story failed at lines {failed}, expected line {oldest[0][2]}")
    check_divergence(browser, vector, release, oldest[0], list_bugs(args.lockstep)["lifo-handoff"])
    browser.screenshot(args.work / "playground.png")
    print(f"ok lifo-bug-breaks-fifo.vec: fails at line {oldest[0][2]}, divergence at {release} ms; "
          f"screenshot {args.work / 'playground.png'}")


def strip_comment_text(line):
    return line[2:].strip()


def check_divergence(browser, vector, release, expected_handoff, bug_story):
    """The divergence box and the highlighted entries at the first release:
    the engine's grant (to someone else) against the model's, which is the
    vector's hand-off."""
    check(not browser.eval("document.querySelector('#divergence').hidden"), "no divergence is shown")
    text = browser.eval("document.querySelector('#divergence').textContent")
    check(f"at {release} ms" in text, f"the divergence is not placed at {release} ms: {text}")
    check(bug_story in text, f"the bug's story '{bug_story}' is not shown: {text}")
    entries = browser.eval(SHOWN)
    diverging = [e for e in entries if "diverge" in e["classes"].split()]
    missing = [e for e in entries if "missing" in e["classes"].split()]
    check(len(diverging) == 1 and len(missing) == 1, f"highlighted: {diverging} and {missing}")
    check(diverging[0]["at"] == release and missing[0]["at"] == release, "highlights away from the release")
    connection, pattern, _ = expected_handoff
    want = pattern.split(" ")
    got_missing = missing[0]["line"].split(" ")
    check(missing[0]["connection"] == connection and got_missing[0] == "A" and got_missing[2:] == want[2:],
          f"the model's answer shown is {missing[0]}, the vector says '{pattern}' on {connection}")
    got_diverging = diverging[0]["line"].split(" ")
    check(got_diverging[0] == "A" and got_diverging[2] != want[2] and diverging[0]["connection"] != connection,
          f"the engine's highlighted answer {diverging[0]} is not a grant to another waiter")


def scenario_manual_bug(browser, args):
    vector = Vector(pathlib.Path(args.vectors) / "fifo-three-waiters-release-chain.vec")
    reset(browser, vector.config)
    browser.eval("(() => { const s = document.querySelector('#bug'); s.value = 'lifo-handoff';"
                 " s.dispatchEvent(new Event('change')); })()")
    check(browser.eval("document.querySelector('#bug').value") == "lifo-handoff", "the bug was not chosen")
    check(browser.eval("document.querySelector('#divergence').hidden"), "a divergence before any request")
    release = min(s[1] for s in vector.steps if s[0] == "at" and s[3].startswith("R "))
    try:
        replay(browser, vector, "engine")
        broken = None
    except Failure as failure:
        broken = str(failure)
    check(broken is not None, "the LIFO engine replayed the FIFO vector without a difference")
    check(f"at {release}:" in broken, f"the LIFO engine broke the vector elsewhere than at {release}: {broken}")
    print(f"as it must, the LIFO engine breaks the vector at its first release: {broken}")
    handoff = [e for e in vector.expects_at(release) if e[1].startswith("A ")][0]
    # The page's columns are c1, c2, ... in the vector's order of first use.
    check_divergence(browser, vector, release, handoff, list_bugs(args.lockstep)["lifo-handoff"])
    print(f"ok: lifo-handoff chosen in the page diverges at {release} ms, as highlighted")


def scenario_export(browser, args):
    downloads = args.work / "downloads"
    downloads.mkdir()
    browser.call("Browser.setDownloadBehavior",
                 {"behavior": "allow", "downloadPath": str(downloads), "eventsEnabled": True}, session=False)
    reset(browser, "sweep_ms=1000")
    for _ in range(4):
        browser.click("#add-connection")
    typed = []

    def send(column, line):
        browser.type_into(f"{column_selector(column)} input.request", line, enter=True)
        check(not page_error(browser), f"'{line}' refused: {page_error(browser)}")
        typed.append((now(browser), column, line))

    def prepared(column, index):
        selector = f"{column_selector(column)} .prepared button:nth-child({index})"
        line = browser.eval(f"document.querySelector({json.dumps(selector)}).textContent")
        browser.click(selector)
        typed.append((now(browser), column, line))

    browser.type_into("#prepared-key", "printer")
    prepared("c1", 1)                                  # A printer alice 5000 0
    move_clock_to(browser, 100)
    prepared("c2", 2)                                  # bob waits
    send("c3", "A printer carol 2000 10000")           # carol waits behind him
    move_clock_to(browser, 300)
    prepared("c1", 3)                                  # alice releases: bob gets it
    send("c4", "A printer  dave 1 1")                  # E: two spaces
    browser.click("#next-due")                         # the sweep at 1000
    check(now(browser) == 1000, f"next due went to {now(browser)}")
    move_clock_to(browser, 5500)                       # bob's lease ended at 5300, not swept
    send("c4", "A printer dave 1000 0")                # takeover
    browser.click(f"{column_selector('c3')} button.close")  # carol's wait goes
    move_clock_to(browser, 6800)
    send("c4", "R printer 3")                           # dave's lease ended at 6500, not swept: R
    move_clock_to(browser, 8000)
    browser.click("#export")
    target = downloads / "playground-session.vec"
    deadline = time.monotonic() + 20
    while not (target.exists() and target.stat().st_size > 0 and not list(downloads.glob("*.crdownload"))):
        check(time.monotonic() < deadline, f"no download in {downloads}: {list(downloads.iterdir())}")
        time.sleep(0.1)
    exported = Vector(target)
    print(target.read_text())
    # What was typed is what the file replays.
    at_lines = [(s[1], s[2], s[3]) for s in exported.steps if s[0] == "at"]
    check(len(at_lines) == len(typed), f"{len(typed)} requests sent, {len(at_lines)} in the file")
    for (t, c, line), (ft, fc, fline) in zip(typed, at_lines):
        check(t == ft and c == fc and (fline == line or re.fullmatch(r"R printer (\$t\d+|\d+)", fline)),
              f"typed {c} '{line}' at {t}, the file has {fc} '{fline}' at {ft}")
    check(("close", 5500, "c3") in [(s[0], s[1], s[2]) for s in exported.steps], "the close is not in the file")
    check(exported.end == 8000, f"the file ends at {exported.end}")
    for service in ("engine", "model"):
        run = subprocess.run([args.lockstep, "conform", "--against", service, str(target)], capture_output=True, text=True)
        print(run.stdout.strip())
        check(run.returncode == 0 and run.stdout.startswith("ok "), f"conform --against {service}: {run.returncode} {run.stdout} {run.stderr}")
    run = subprocess.run([args.lockstep, "conform", "--inject-bug", "lifo-handoff", str(target)], capture_output=True, text=True)
    print(run.stdout.strip())
    check(run.returncode == 1 and "FAIL" in run.stdout, f"conform with lifo-handoff: {run.returncode} {run.stdout}")
    print("ok: the exported session conforms, and the LIFO engine fails it")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["corpus-simple", "corpus-cluster", "examples", "manual-bug", "export"])
    parser.add_argument("--lockstep", required=True)
    parser.add_argument("--page", required=True)
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--examples", required=True)
    parser.add_argument("--work", required=True, type=pathlib.Path)
    args = parser.parse_args()

    chromium = shutil.which("chromium")
    if not chromium:
        print("SKIPPED: no chromium on PATH (scripts/setup.sh installs Debian's chromium)")
        return SKIP
    if not (pathlib.Path(args.page) / "lockstep.js").is_file():
        if not shutil.which("em++"):
            print("SKIPPED: no emscripten, so no page (scripts/setup.sh installs Debian's emscripten)")
            return SKIP
        print(f"FAIL: no built page in {args.page} although emscripten is here (the web.page_build fixture builds it)")
        return 1
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)

    try:
        server = Playground(args.lockstep, args.page, args.work)
    except Failure as failure:
        print(f"FAIL: {failure}")
        return 1
    try:
        verdict = drive(chromium, server, args)
    finally:
        status = server.stop()
    if verdict == 0 and status != 0:
        print(f"FAIL: lockstep playground exited {status} on SIGTERM, expected 0")
        return 1
    if verdict == 0:
        print("ok")
    return verdict


def drive(chromium, server, args):
    browser = Browser(chromium, args.work)
    try:
        browser.open(server.url)
        if args.scenario == "corpus-simple":
            scenario_corpus(browser, args, "simple")
        elif args.scenario == "corpus-cluster":
            scenario_corpus(browser, args, "cluster")
        elif args.scenario == "examples":
            scenario_examples(browser, args)
        elif args.scenario == "manual-bug":
            scenario_manual_bug(browser, args)
        else:
            scenario_export(browser, args)
        errors = browser.page_errors()
        check(not errors, f"the page logged errors: {errors}")
    except Failure as failure:
        print(f"FAIL: {failure}")
        try:
            browser.screenshot(args.work / "failure.png")
            print(f"screenshot of the failure: {args.work / 'failure.png'}")
        except Failure:
            pass
        return 1
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
