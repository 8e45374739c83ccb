"""Suite-wide rule: a test that cannot run because something it needs is missing.

Such a test skips with one line naming what is missing (``pytest.skip("needs: ...")``,
``pytest.importorskip("mcp", reason="needs: ...")`` or ``skipif(..., reason="needs: ...")``)
on a developer's machine, and FAILS under ``CI=true``, where everything must be installed:
the seed documents, the official MCP SDK, Playwright and Debian's chromium. Other skips are
left alone.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Generator

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
    pytest.importorskip("psycopg", reason=f"{NEEDS}psycopg (pip install 'agora-mcp[pg]')")
    name = f"t_{secrets.token_hex(6)}"
    url = fresh_pg_schema(server, name)
    yield url
    drop_pg_schema(server, name)
