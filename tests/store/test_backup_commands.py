"""README's backup commands, run as written: they fail on a missing or empty source and
create nothing, and make a checked copy of a real database while its server writes.

An operator's finding: the commands README gave opened the source for writing by a relative
path, so from the wrong directory (a cron job's) they made an empty ``agora.db`` and a valid,
empty backup, and exited 0 every night.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
import trio
from _items import ITEMS, insert

from agora.store.db import open_store

pytestmark = pytest.mark.sqlite_only("SQLite's backup of a database file")

README = Path(__file__).resolve().parents[2] / "README.md"
SOURCE, TARGET = "/var/lib/agora/agora.db", "/backups/agora.db"


def _commands() -> list[str]:
    """The bash blocks of README's "Backups" section that make ``TARGET`` and check it."""
    text = README.read_text()
    section = text.split("\n### Backups\n", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    made = [block for block in blocks if TARGET in block and "quick_check" in block]
    assert len(made) == 2, made
    return made


def _run(command: str, source: Path, target: Path) -> subprocess.CompletedProcess[str]:
    if command.startswith("sqlite3") and shutil.which("sqlite3") is None:
        pytest.skip("needs: the sqlite3 shell")
    script = command.replace(SOURCE, str(source)).replace(TARGET, str(target))
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=False, timeout=60
    )


@pytest.fixture(params=[0, 1], ids=["sqlite3-shell", "python"])
def command(request: pytest.FixtureRequest) -> str:
    return _commands()[request.param]


def test_a_missing_source_fails_and_creates_nothing(tmp_path: Path, command: str) -> None:
    done = _run(command, tmp_path / "wrong" / "agora.db", tmp_path / "backup.db")
    assert done.returncode != 0, done
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "wrong").mkdir()
    done = _run(command, tmp_path / "wrong" / "agora.db", tmp_path / "backup.db")
    assert done.returncode != 0, done
    assert list((tmp_path / "wrong").iterdir()) == []  # no empty agora.db left there


def test_an_empty_source_is_not_a_backup(tmp_path: Path, command: str) -> None:
    (tmp_path / "agora.db").touch()  # what the old command left behind
    done = _run(command, tmp_path / "agora.db", tmp_path / "backup.db")
    assert done.returncode != 0, done
    assert not (tmp_path / "backup.db").exists()


async def test_a_running_servers_database_is_copied_and_checked(
    tmp_path: Path, command: str
) -> None:
    path = tmp_path / "agora.db"
    async with open_store(path, [ITEMS]) as store:
        with trio.fail_after(30):
            for n in range(1, 21):
                await store.write([insert(n)])
            done = await trio.to_thread.run_sync(_run, command, path, tmp_path / "backup.db")
    assert done.returncode == 0, done
    with contextlib.closing(sqlite3.connect(tmp_path / "backup.db")) as copy:
        assert copy.execute("SELECT count(*) FROM items").fetchone()[0] == 20
