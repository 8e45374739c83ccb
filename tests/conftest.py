"""Suite-wide rules: missing prerequisites, and the PostgreSQL pass.

A test that cannot run because something it needs is missing skips with one line naming what
is missing skips with one line naming what is missing (``pytest.skip("needs: ...")``,
``pytest.importorskip("mcp", reason="needs: ...")`` or ``skipif(..., reason="needs: ...")``)
on a developer's machine, and FAILS under ``CI=true``, where everything must be installed:
the seed documents, the official MCP SDK, Playwright and Debian's chromium. Other skips are
left alone.

``AGORA_TEST_BACKEND=postgresql`` (with ``AGORA_TEST_PG`` naming a server) runs the whole
suite on PostgreSQL: this session creates a database of its own on that server, and every
store the tests open, in process or in the servers they start, becomes a schema in it
(`agora.store.pg_redirect`); the database is dropped at the end. Tests of SQLite itself are
marked ``sqlite_only("why")`` and skipped by that pass, as are the tests that take a
``pg_url`` (they run on PostgreSQL in the first pass already).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import pytest

from disks import small_tmpfs

if TYPE_CHECKING:
    from collections.abc import Generator
    from pathlib import Path

#: The reason prefix that marks "a prerequisite is missing".
NEEDS = "needs: "


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def _needs_reason(report: Any) -> str | None:
    """The reason of a skipped report if it is a missing prerequisite, else None."""
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return None
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    return reason if reason.startswith(NEEDS) else None


def _fail_in_ci(report: Any) -> None:
    reason = _needs_reason(report)
    if reason is not None and _in_ci():
        report.outcome = "failed"
        report.longrepr = f"CI=true and a prerequisite is missing ({reason})"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[Any]:
    """A test skipped for a missing prerequisite fails in CI."""
    outcome = yield
    _fail_in_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[Any]:
    """A module skipped at import for a missing prerequisite fails in CI."""
    outcome = yield
    _fail_in_ci(outcome.get_result())


# -- PostgreSQL: one fresh schema per test on the server named by AGORA_TEST_PG --------------

#: The PostgreSQL server the tests may use (``bash scripts/pg.sh start DIR`` prints one).
PG_ENV = "AGORA_TEST_PG"
#: ``postgresql``: run the whole suite on PostgreSQL (see the module docstring).
BACKEND_ENV = "AGORA_TEST_BACKEND"
_suite_db: dict[str, str] = {}


def on_postgresql() -> bool:
    """Whether this session is the suite's PostgreSQL pass."""
    return os.environ.get(BACKEND_ENV, "").lower() == "postgresql"


def pytest_configure(config: pytest.Config) -> None:
    """On the PostgreSQL pass, create this session's database and point every store at it."""
    if not on_postgresql() or _suite_db:
        return
    server = pg_server()
    if server is None:
        raise pytest.UsageError(f"{BACKEND_ENV}=postgresql needs {PG_ENV} (a PostgreSQL URL)")
    import secrets

    import psycopg

    name = f"agora_suite_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = _as_url(server, name)
    # Every schema finds pg_trgm in public; an extension created by a test's migration would
    # live in (and vanish with) that test's schema.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
    _suite_db.update(server=server, name=name)
    os.environ[PG_ENV] = url


def _as_url(server: str, name: str) -> str:
    """``server`` (a postgresql:// URL) naming database ``name`` instead."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(server)
    return urlunsplit(parts._replace(path=f"/{name}"))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Drop the PostgreSQL pass's database (servers still connected are cut off)."""
    if not _suite_db:
        return
    import psycopg

    os.environ[PG_ENV] = _suite_db["server"]
    with psycopg.connect(_suite_db["server"], autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{_suite_db["name"]}" WITH (FORCE)')
    _suite_db.clear()


def pytest_report_header(config: pytest.Config) -> str:
    """Which backend the stores of this session run on."""
    if _suite_db:
        return f"agora backend: postgresql (database {_suite_db['name']})"
    return "agora backend: sqlite"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the PostgreSQL pass, skip the tests of SQLite itself, saying why, and the tests
    that take a ``pg_url``: they run on PostgreSQL in the SQLite pass already."""
    if not on_postgresql():
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            why = marker.args[0] if marker.args else "tests SQLite itself"
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {why}"))
        elif "pg_url" in getattr(item, "fixturenames", ()):
            item.add_marker(
                pytest.mark.skip(reason="ran on PostgreSQL in the SQLite pass (pg_url)")
            )


def pg_server() -> str | None:
    """The test PostgreSQL server's URL, or None when none is configured."""
    return os.environ.get(PG_ENV) or None


def fresh_pg_schema(server: str, name: str) -> str:
    """Create schema ``name`` on ``server``; the URL of a database living in it."""
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        conn.execute(f'CREATE SCHEMA "{name}"')
    sep = "&" if "?" in server else "?"
    return f"{server}{sep}options=-csearch_path%3D{name}%2Cpublic"


def drop_pg_schema(server: str, name: str) -> None:
    """Drop schema ``name`` and everything in it."""
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def pg_url() -> Generator[str]:
    """A PostgreSQL database URL of its own (a fresh schema), for one test."""
    import secrets

    server = pg_server()
    if server is None:
        pytest.skip(f"{NEEDS}a PostgreSQL server ({PG_ENV}; bash scripts/pg.sh start DIR)")
    pytest.importorskip("psycopg", reason=f"{NEEDS}psycopg (pip install '.[pg]')")
    name = f"t_{secrets.token_hex(6)}"
    url = fresh_pg_schema(server, name)
    yield url
    drop_pg_schema(server, name)


@pytest.fixture
def small_disk(tmp_path: Path) -> Generator[Path]:
    """A 4 MiB tmpfs to fill (`disks.fill`), unmounted afterwards; root only."""
    with small_tmpfs(tmp_path) as mount:
        yield mount


@pytest.fixture(autouse=True)
def _root_log_level_restored() -> Generator[None]:
    """The root logger's level as each test found it: a test running ``agora.cli.main`` (which
    applies ``log_level`` to the root logger, as the command does) must not leave it at INFO,
    where every later test's caplog would take INFO records of every logger."""
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)
