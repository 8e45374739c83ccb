"""``agora serve`` refuses a configuration it cannot honour before it opens anything.

Each case is a real ``agora serve`` process given one mistake an operator makes (a value out
of range, a principal whose token can never match, a setting spelt wrong in the file or in
the environment): it must exit 2 with one line on stderr that names the setting, where it
came from (the file or the ``AGORA_*`` variable), and what is expected, and it must not have
created the database: a server that starts half-configured fails later, at a worse moment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import trio
from e2e_support import AGORA, clean_env

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 20


async def refused(tmp_path: Path, toml: str, **env: str) -> str:
    """Run ``agora serve`` on ``toml``; its one stderr line, after checking exit status 2."""
    config = tmp_path / "agora.toml"
    # Any free port, should the mistake be missed: never a port another server may hold.
    config.write_text(toml if toml.startswith("port") else f"port = 0\n{toml}")
    db = tmp_path / "agora.db"
    args = [AGORA, "serve", "--config", str(config), "--db", str(db)]
    with trio.fail_after(TIMEOUT):
        done = await trio.run_process(
            args, capture_stdout=True, capture_stderr=True, check=False, env=clean_env(**env)
        )
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, lines
    assert len(lines) == 1, lines
    assert not db.exists(), "refused after opening the database"
    return lines[0]


async def test_a_misspelt_setting_in_the_file_names_the_file_and_a_near_name(tmp_path):
    line = await refused(tmp_path, "prot = 8765")
    assert line.startswith(f"agora: {tmp_path / 'agora.toml'}: invalid configuration:"), line
    assert "unknown field `prot`" in line
    assert "did you mean `port`?" in line


@pytest.mark.parametrize(
    ("variable", "value", "key"),
    [
        pytest.param("AGORA_PORT", "abc", "port", id="port"),
        pytest.param("AGORA_SHARED", "maybe", "shared", id="bool"),
    ],
)
async def test_a_bad_environment_variable_is_named(tmp_path, variable, value, key):
    line = await refused(tmp_path, "", **{variable: value})
    assert line.startswith(f"agora: {variable}: invalid configuration:"), line
    assert f"`$.{key}`" in line
