"""What a newcomer installs and what the checkout ignores agree with what the README runs.

Tester findings: README's "From Python" example uses ``mcp.Client``, which only the SDK's 2.x
has, yet README said ``pip install mcp`` (which keeps a 1.x already installed) and the test
extra accepted ``mcp>=1.20``; and following README in the checkout (``agora serve``,
``examples/notes.py``) left an untracked ``<db>.lock`` that ``.gitignore`` did not cover.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _from_python_paragraph() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index("**From Python**") :]
    return after[: after.index("```python")]


def test_the_readme_installs_the_sdk_whose_client_its_example_uses():
    paragraph = " ".join(_from_python_paragraph().split())
    assert 'pip install "mcp>=2"' in paragraph, paragraph
    assert "`pip install mcp`)" not in paragraph, paragraph


def test_the_test_extra_requires_the_sdk_2_whose_client_the_tests_use():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["test"]
    [mcp] = [r for r in extra if re.match(r"mcp\b(?!-)", r)]
    assert mcp.replace(" ", "") == "mcp>=2", mcp


def test_gitignore_covers_the_files_a_server_leaves_beside_its_database():
    patterns = [
        line.strip()
        for line in (ROOT / ".gitignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for name in ("agora.db", "agora.db-wal", "agora.db-shm", "agora.db.lock", "notes.db.lock"):
        assert any(fnmatch.fnmatch(name, p) for p in patterns), name
