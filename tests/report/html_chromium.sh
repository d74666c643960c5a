#!/usr/bin/env bash
# The HTML report of a broken run, in headless Chromium, as a reader sees it.
# Two runs whose verdicts do not depend on this machine's timing: the
# checked-in history of a live server with the LIFO hand-off bug, and a 60 s
# simulated run with it (`lockstep sim --history`, 100 clients over 1,000
# keys). For each report:
#   - it loads without a script error, and its script ran (it sets
#     <body data-rendered="N">, N the timelines drawn, at least 1);
#   - it opens on the violation: the element with id `verdict` says
#     `violation`, and the first violation (id violation-1), with its
#     timeline, comes before the summary;
#   - it fits the window: no horizontal scrolling at 1000 px
#     (<body data-fits="1">, set from the page's own widths);
#   - no literal backtick is left in its text;
#   - the 60 s run's report is under 1 MB.
# A screenshot of each is written and named in the log, for a reader to
# look at. Exits 77 (CTest: skipped, never passed) without chromium.
#
# --enable-logging=stderr is what makes Chromium print the page's console,
# and so an uncaught exception ("Uncaught ..."), on stderr; without it a
# broken script would go unseen. A fresh profile directory keeps the run
# away from $HOME.
#
# usage: html_chromium.sh LOCKSTEP WORK_DIR BROKEN_HISTORY
set -uo pipefail
lockstep=$1 work_dir=$2 broken=$3
fail() { echo "FAIL: $*"; exit 1; }
chromium=$(command -v chromium || true)
if [ -z "$chromium" ]; then
  echo "SKIPPED: no chromium on PATH (scripts/setup.sh installs Debian's chromium)"
  exit 77
fi
rm -rf "$work_dir" && mkdir -p "$work_dir"

browse() {  # browse NAME: dumps the DOM of NAME.html and takes its screenshot
  local name=$1 status
  local page="file://$(realpath "$work_dir/$name.html")"
  for what in "--dump-dom" "--screenshot=$work_dir/$name.png"; do
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
      --hide-scrollbars --window-size=1000,900 --user-data-dir="$work_dir/profile" --enable-logging=stderr \
      $what "$page" >"$work_dir/$name.${what%%=*}.out" 2>"$work_dir/$name.chromium.err"
    status=$?
    [ $status -eq 0 ] || fail "chromium $what exited $status; see $work_dir/$name.chromium.err"
    if grep -n "Uncaught" "$work_dir/$name.chromium.err"; then fail "the script of $name.html threw"; fi
  done
  mv "$work_dir/$name.--dump-dom.out" "$work_dir/$name.dom.html"
  [ -s "$work_dir/$name.png" ] || fail "no screenshot of $name.html"
  echo "screenshot: $work_dir/$name.png ($(stat -c %s "$work_dir/$name.png") bytes, 1000 px wide)"
  python3 - "$work_dir/$name.dom.html" <<'PY' || fail "$name.html: see above"
import html.parser, re, sys

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.body, self.order, self.text = {}, [], []
        self.verdict_depth, self.verdict = 0, ""
    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body = attrs
        if attrs.get("id"):
            self.order.append(attrs["id"])
        if tag == "svg" and "timeline" in (attrs.get("class") or ""):
            self.order.append("svg")
        if self.verdict_depth:
            self.verdict_depth += 1
        elif attrs.get("id") == "verdict":
            self.verdict_depth = 1
    def handle_endtag(self, tag):
        if self.verdict_depth:
            self.verdict_depth -= 1
    def handle_data(self, data):
        self.text.append(data)
        if self.verdict_depth:
            self.verdict += data

page = Page()
page.feed(open(sys.argv[1], encoding="utf-8").read())
print(f"  body: data-rendered={page.body.get('data-rendered')} data-fits={page.body.get('data-fits')}; "
      f"#verdict: {page.verdict.strip()!r}; order: {' '.join(page.order[:6])}")
problems = []
if "violation" not in page.verdict:
    problems.append("the element with id verdict does not say violation")
if int(page.body.get("data-rendered") or 0) < 1:
    problems.append("no timeline drawn (or the script did not run)")
if page.body.get("data-fits") != "1":
    problems.append("the page is wider than the window (horizontal scrolling)")
first = [i for i in page.order if i in ("violation-1", "svg", "summary")]
if first[:2] != ["violation-1", "svg"] or "summary" not in first:
    problems.append(f"it does not open on the violation and its timeline, before the summary: {first[:3]}")
text = "".join(page.text)
if "`" in text:
    problems.append(f"literal backticks in the text: {text[text.index('`') - 40:text.index('`') + 40]!r}")
for problem in problems:
    print("  " + problem)
sys.exit(1 if problems else 0)
PY
}

# The checked-in LIFO run of a live server.
"$lockstep" check-history "$broken" --report "$work_dir/live.html" >"$work_dir/live.out"
status=$?
[ $status -eq 1 ] || fail "check-history of the LIFO run exited $status, expected 1 (a violation); see $work_dir/live.out"
browse live

# A 60 s run: the simulator with the LIFO hand-off, its clients' view checked.
"$lockstep" sim --seed 1 --inject-bug lifo-handoff --history "$work_dir/sim60.ndjson" >"$work_dir/sim.out"
[ $? -eq 1 ] || fail "the simulator did not catch lifo-handoff on seed 1; see $work_dir/sim.out"
"$lockstep" check-history "$work_dir/sim60.ndjson" --budget-states 2000000 --report "$work_dir/sim60.html" >"$work_dir/sim60.out"
status=$?
[ $status -eq 1 ] || fail "check-history of the 60 s simulated LIFO run exited $status, expected 1; see $work_dir/sim60.out"
bytes=$(stat -c %s "$work_dir/sim60.html")
echo "report of the 60 s run: $bytes bytes ($(grep -c '"ev"' "$work_dir/sim60.ndjson") events in its history)"
[ "$bytes" -lt 1000000 ] || fail "the report of a 60 s run is $bytes bytes, not under 1 MB"
browse sim60
echo "ok"
