#!/usr/bin/env bash
# The HTML report of a broken run (the checked-in history of a live server
# with the LIFO hand-off bug, so the verdict does not depend on this
# machine's timing) loads in headless Chromium without a
# script error: its script ran (it sets <body data-rendered="N">, N the key
# timelines drawn, at least 1) and the element with id `verdict` says
# `violation`. Exits 77 (CTest: skipped, never passed) without chromium.
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

report=$work_dir/report.html
"$lockstep" check-history "$broken" --report "$report" >"$work_dir/check.out"
status=$?
[ $status -eq 1 ] || fail "check-history of the LIFO run exited $status, expected 1 (a violation); see $work_dir/check.out"
[ -s "$report" ] || fail "no report written"

timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
  --user-data-dir="$work_dir/profile" --enable-logging=stderr \
  --dump-dom "file://$(realpath "$report")" >"$work_dir/dom.html" 2>"$work_dir/chromium.err"
status=$?
[ $status -eq 0 ] || fail "chromium exited $status; see $work_dir/chromium.err"
if grep -n "Uncaught" "$work_dir/chromium.err"; then fail "the report's script threw"; fi
body=$(grep -o '<body[^>]*>' "$work_dir/dom.html" | head -n 1)
echo "dumped DOM: $body"
rendered=$(echo "$body" | sed -n 's/.*data-rendered="\([0-9]*\)".*/\1/p')
[ -n "$rendered" ] || fail "<body> has no data-rendered: the report's script did not run"
[ "$rendered" -ge 1 ] || fail "data-rendered=\"$rendered\": no key timeline was drawn"
python3 - "$work_dir/dom.html" <<'PY' || fail "the element with id verdict does not say violation"
import html.parser, sys

class Verdict(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.depth, self.text = 0, ""
    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.depth += 1
        elif dict(attrs).get("id") == "verdict":
            self.depth = 1
    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1
    def handle_data(self, data):
        if self.depth:
            self.text += data

parser = Verdict()
parser.feed(open(sys.argv[1], encoding="utf-8").read())
print(f"#verdict: {parser.text.strip()!r}")
sys.exit(0 if "violation" in parser.text else 1)
PY
echo "ok"
