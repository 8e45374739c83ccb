"""``agora stdio --db``'s start line, as a user reads it on stderr.

A tester's finding: ``agora stdio --db agora.db`` (README's own example's form), ``--db
./agora.db`` or ``AGORA_DB=agora.db`` said the file was "the default ...: --db or AGORA_DB
chooses another", telling one who had passed ``--db`` to pass it. The note is for a start
where nothing chose the database.
"""

from __future__ import annotations

import pytest
import trio
from e2e_mcp import INITIALIZE, INITIALIZED, jsonl
from e2e_process import run_agora

TIMEOUT = 30
NOTE = "(the default, in the working directory: --db or AGORA_DB chooses another)"
LIST = jsonl(INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


@pytest.mark.sqlite_only("the default ./agora.db: a SQLite file in the working directory")
@pytest.mark.parametrize(
    ("args", "env", "noted"),
    [
        pytest.param([], {}, True, id="nothing-chose-it"),
        pytest.param(["--db", "agora.db"], {}, False, id="db-flag"),
        pytest.param(["--db", "./agora.db"], {}, False, id="db-flag-dot"),
        pytest.param([], {"AGORA_DB": "agora.db"}, False, id="AGORA_DB"),
        pytest.param(["--config", "agora.toml"], {}, False, id="config-file"),
    ],
)
async def test_the_start_line_calls_the_database_the_default_only_when_nothing_chose_it(
    tmp_path, args, env, noted
):
    (tmp_path / "agora.toml").write_text('db = "agora.db"\n')
    with trio.fail_after(TIMEOUT):
        done = await run_agora(
            "stdio", "--toolset", "router", *args, stdin=LIST, cwd=tmp_path, **env
        )
    assert done.returncode == 0, done.stderr
    [line] = [s for s in done.stderr.decode().splitlines() if "on stdio; database" in s]
    assert line.split("on stdio; database ")[1].startswith(str(tmp_path / "agora.db")), line
    assert (NOTE in line) is noted, line
