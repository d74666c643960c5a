#!/usr/bin/env bash
# `lockstep playground`: options out of range or malformed exit 2 with one
# line on stderr; a folder without a built page exits 2 and says how to
# build one; on a folder with the page's files it prints its loopback
# address, serves those files (with their content types) and nothing else
# (no `..`, no hidden file, no other method), and SIGTERM stops it with
# exit 0. The page's files here are stand-ins: what is checked is the server.
#
# usage: playground_cli.sh LOCKSTEP WORK_DIR
set -uo pipefail
lockstep=$1 work_dir=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work_dir" && mkdir -p "$work_dir/page"

expect_usage_error() {
  "$lockstep" playground "$@" >"$work_dir/out" 2>"$work_dir/err"
  local status=$?
  [ $status -eq 2 ] || fail "playground $* exited $status, expected 2"
  [ -s "$work_dir/err" ] || fail "playground $* said nothing on stderr"
  echo "ok: playground $* -> 2: $(head -n 1 "$work_dir/err")"
}
expect_usage_error --port 65536
expect_usage_error --port -1
expect_usage_error --port abc
expect_usage_error --no-such-option
expect_usage_error --dir "$work_dir/nothing-here"
grep -q "cmake --preset web" "$work_dir/err" || fail "the missing page's message does not say how to build it"

page=$work_dir/page
echo '<!doctype html><title>stand-in</title>' >"$page/index.html"
echo 'window.APP = 1;' >"$page/app.js"
echo 'var createLockstep;' >"$page/lockstep.js"
echo 'window.LOCKSTEP_VECTORS = [];' >"$page/vectors.js"
echo 'secret' >"$page/.hidden"
echo 'outside' >"$work_dir/outside.txt"

"$lockstep" playground --port 0 --dir "$page" >"$work_dir/serve.out" 2>"$work_dir/serve.err" &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 1 100); do
  grep -q "http://127.0.0.1:" "$work_dir/serve.out" && break
  sleep 0.05
done
url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$work_dir/serve.out" | head -n 1)
[ -n "$url" ] || fail "no address printed; stdout: $(cat "$work_dir/serve.out"), stderr: $(cat "$work_dir/serve.err")"
echo "serving at $url"

python3 - "$url" "$page" <<'PY' || fail "the server answered wrongly"
import http.client, sys, urllib.parse
url, page = sys.argv[1], sys.argv[2]
parts = urllib.parse.urlsplit(url)

def ask(method, path):
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request(method, path)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, response.getheader("Content-Type"), body

checks = [
    ("GET", "/", 200, "text/html", open(f"{page}/index.html", "rb").read()),
    ("GET", "/index.html", 200, "text/html", open(f"{page}/index.html", "rb").read()),
    ("GET", "/app.js?v=1", 200, "text/javascript", open(f"{page}/app.js", "rb").read()),
    ("HEAD", "/vectors.js", 200, "text/javascript", b""),
    ("GET", "/.hidden", 404, None, None),
    ("GET", "/../outside.txt", 404, None, None),
    ("GET", "/%2e%2e/outside.txt", 404, None, None),
    ("GET", "/missing.js", 404, None, None),
    ("POST", "/index.html", 405, None, None),
]
ok = True
for method, path, status, kind, body in checks:
    got_status, got_kind, got_body = ask(method, path)
    good = got_status == status and (kind is None or (got_kind or "").startswith(kind)) and (body is None or got_body == body)
    print(f"{'ok' if good else 'WRONG'}: {method} {path} -> {got_status} {got_kind} ({len(got_body)} bytes)")
    ok = ok and good
sys.exit(0 if ok else 1)
PY

kill -TERM $server
wait $server
status=$?
trap - EXIT
[ $status -eq 0 ] || fail "SIGTERM: exit $status, expected 0"
echo "ok: SIGTERM -> exit 0"
