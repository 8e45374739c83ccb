"""README's "From Python" example, run as written against a server that requires tokens.

The Debate section asks every debater and the judge for a bearer token of their own, and a
reachable server should not allow tokenless callers; the example connected without one and
got 401, and nothing said how the official SDK sends a token. The example now passes one
(`AGORA_TOKEN`) and opens a session of that token's principal.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import pytest
import trio

from agora.config import Config, PrincipalConfig
from agora.server.embed import open_server

pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

README = Path(__file__).parent.parent.parent / "README.md"
TOKEN = "token-of-pro"


def _example() -> str:
    """The Python block that follows README's "From Python" paragraph."""
    text = README.read_text(encoding="utf-8")
    after = text[text.index("**From Python**") :]
    found = re.search(r"```python\n(.*?)```", after, re.S)
    assert found is not None
    return found.group(1)


async def test_the_readme_python_example_connects_with_a_token(tmp_path):
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    config = Config(
        port=0,
        db=str(tmp_path / "readme.db"),
        allow_anonymous=False,
        principals=[PrincipalConfig("pro", digest, [], ["local"])],
    )
    with trio.fail_after(60):
        async with open_server(config) as server:
            code = _example().replace("http://127.0.0.1:8765", server.url)
            script = tmp_path / "example.py"
            script.write_text(code, encoding="utf-8")
            env = {**os.environ, "AGORA_TOKEN": TOKEN}
            done = await trio.run_process(
                [sys.executable, str(script)], env=env, capture_stdout=True, capture_stderr=True,
                check=False,
            )  # fmt: skip
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert re.search(r"^\d+ tools$", out, re.M), out
    assert re.search(r"^pro [0-9a-f-]{36}$", out, re.M), out
