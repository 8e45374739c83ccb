#!/usr/bin/env bash
# Run the whole test suite from a fresh checkout: creates .venv, installs agora with its
# test extras, installs headless Chromium for the browser tests when possible, runs pytest.
# Extra arguments go to pytest. AGORA_INSTALL_ONLY=1 installs and stops before pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# agora is installed editable, so only a change to pyproject.toml (dependencies, entry points)
# needs another install: its digest is kept beside the venv. This also lets two runs of this
# script share one .venv side by side (CI's two passes) without reinstalling under each other.
stamp=.venv/.agora-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e '.[test]'
  echo "$want" >"$stamp"
fi
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium not installed: browser tests will be skipped" >&2
fi
if [ "${AGORA_INSTALL_ONLY:-}" = 1 ]; then
  exit 0
fi
exec .venv/bin/python -m pytest "$@"
