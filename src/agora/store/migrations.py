"""Versioned schema migrations, applied at open time in one transaction per step.

Each component (the core, each toolset) keeps its own version in `agora_schema`. Opening an
older file upgrades it, each component's steps applied logged at INFO in one line (`applied`: an
upgrade changes the operator's data, one way, and says so); a file from a newer agora (a version
we do not know) is refused. This module runs synchronously on the writer connection before the
writer thread starts.

A step is written per dialect: ``apply`` (a function of a ``sqlite_utils.Database``) or
``sql["sqlite"]`` for SQLite, ``sql["postgresql"]`` (a list of statements) for PostgreSQL.
The PostgreSQL side is applied by `agora.store.pg` with the same versions table. Every step
is checked for the dialect at hand before any is applied (`plan`): a step that could not run
as written (no statements for the dialect, a misspelt dialect, a version below 1, a string
where a list of statements belongs) would otherwise be recorded as applied with nothing run,
or skipped, for good.
"""

from __future__ import annotations

import difflib
import itertools
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import sqlite_utils

from agora.errors import StoreError
from agora.logsafe import one_line
from agora.store.neutral import POSTGRESQL, SQLITE

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterable, Mapping

log = logging.getLogger(__name__)

#: The dialects a step's ``sql`` may name.
DIALECTS = (SQLITE, POSTGRESQL)


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step of one component, applied once, in order, inside a transaction.

    Attributes:
        apply: The SQLite step, given a ``sqlite_utils.Database`` (None: run ``sql["sqlite"]``).
        sql: Statements per dialect (``"sqlite"``, ``"postgresql"``), run in order.
    """

    component: str
    version: int
    apply: Callable[[sqlite_utils.Database], None] | None = None
    sql: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def statements(self, dialect: str) -> Sequence[str] | None:
        """This step's statements for ``dialect``, or None if it has none."""
        return self.sql.get(dialect)


def with_statements(
    migrations: Iterable[Migration], dialect: str, steps: Mapping[int, Sequence[str]]
) -> tuple[Migration, ...]:
    """``migrations`` with ``steps[version]`` as each step's statements for ``dialect``.

    How a toolset adds its PostgreSQL twin without touching its SQLite steps:
    ``MIGRATIONS = with_statements((...), "postgresql", {1: [...], 2: []})``.

    Raises:
        ValueError: ``steps`` names a version that is not among ``migrations``.
    """
    found = tuple(migrations)
    unknown = set(steps) - {m.version for m in found}
    if unknown:
        raise ValueError(f"no migration step with version {sorted(unknown)}")
    return tuple(
        replace(m, sql={**m.sql, dialect: list(steps[m.version])}) if m.version in steps else m
        for m in found
    )


def plan(
    current: dict[str, int], migrations: Iterable[Migration], dialect: str
) -> list[tuple[str, list[Migration]]]:
    """Each component's steps, sorted; refuses a schema newer than the newest known step,
    and any step that cannot run on ``dialect`` as written, before one is applied.

    Raises:
        StoreError: a step that cannot run on ``dialect`` (see `malformed`), a component's
            stored version is newer than this agora's, or two steps of one component have
            one version (say, a toolset that took another's component name): one of them
            would never run.
    """
    by_component: dict[str, list[Migration]] = defaultdict(list)
    for m in migrations:
        problem = malformed(m, dialect)
        if problem is not None:
            raise StoreError(f"migration step {m.component} v{m.version} {problem}")
        by_component[m.component].append(m)
    out = []
    for component, steps in sorted(by_component.items()):
        steps.sort(key=lambda m: m.version)
        for before, after in itertools.pairwise(steps):
            if before.version == after.version:
                raise StoreError(
                    f"two migration steps are {component} v{after.version}: only one would"
                    " run; give each component (a toolset) a name of its own and each of its"
                    " steps a version of its own"
                )
        have = current.get(component, 0)
        newest = steps[-1].version
        if have > newest:
            raise StoreError(
                f"the database has {component} schema v{have}, newer than v{newest}, the newest"
                f" step of {component} here: a newer version of agora or of the {component}"
                " toolset migrated it (run that version, or restore the backup taken before)"
            )
        out.append((component, steps))
    return out


def applied(component: str, before: int, after: int) -> None:
    """Log, at INFO, that ``component``'s steps took its schema from version ``before`` (0:
    none) to ``after``: one line a component, however many steps (a new database runs a
    score of them)."""
    if after <= before:
        return
    if before:
        log.info("migrated the %s schema from v%d to v%d", component, before, after)
    else:
        log.info("created the %s schema at v%d", component, after)


def failed(step: Migration, exc: BaseException, hint: str = "") -> StoreError:
    """The error of ``step``, which raised ``exc``, in one line (PostgreSQL's HINT and
    CONTEXT made part of it): named with its type (a `KeyError`'s text is only the key),
    then ``hint`` (what to do, if known: `agora.store.pg_grants.privileges`)."""
    told = f" ({hint})" if hint else ""
    return StoreError(
        f"migration {step.component} v{step.version} failed: {type(exc).__name__}:"
        f" {one_line(exc)}{told}"
    )


def malformed(step: Migration, dialect: str) -> str | None:
    """Why ``step`` cannot run on ``dialect`` as written (words that follow its name), or None.

    Each of these used to pass in silence on SQLite: a step with no SQLite statements (a
    misspelt ``"sqllite"`` key, a PostgreSQL-only step) was recorded as applied with nothing
    run, version 0 was skipped as already applied, and a string of SQL was run character by
    character. The version would then stay marked, its tables never made.
    """
    version = step.version
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        return (
            f"has version {version!r}: versions are integers from 1 up (a component with no"
            " step applied is at 0, so a step at 0 or below would never run)"
        )
    for key, statements in step.sql.items():
        if key not in DIALECTS:
            near = difflib.get_close_matches(str(key), DIALECTS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            return f"names dialect {key!r} in sql{hint} (known: {', '.join(DIALECTS)})"
        if (
            isinstance(statements, str | bytes)
            or not isinstance(statements, Sequence)
            or not all(isinstance(sql, str) for sql in statements)
        ):
            return (
                f"has sql[{key!r}] of type {type(statements).__name__}: it must be a list of"
                " statements (strings), even for one statement"
            )
    if dialect == SQLITE and step.apply is None and SQLITE not in step.sql:
        return (
            "has no SQLite schema (neither apply= nor sql['sqlite']):"
            " this toolset cannot run on SQLite"
        )
    if dialect == POSTGRESQL and POSTGRESQL not in step.sql:
        return "has no PostgreSQL schema: this toolset cannot run on PostgreSQL yet"
    return None


def apply_migrations(
    conn: sqlite3.Connection,
    migrations: Iterable[Migration],
    check: Callable[[], None] | None = None,
) -> dict[str, int]:
    """Bring every component's tables up to its newest migration.

    Args:
        conn: The writer connection (autocommit mode).
        migrations: All known migrations, any order.
        check: Called before each step begins and before it commits: what it raises stops
            the migration there, that step rolled back (an open that was cancelled).

    Returns:
        The version of each component after migrating.

    Raises:
        StoreError: if the file holds a newer schema than this agora knows, a step cannot
            run on SQLite as written (nothing is applied then), or a step fails.
    """
    conn.execute(
        "CREATE TABLE IF NOT EXISTS agora_schema "
        "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
    )
    current = dict(conn.execute("SELECT component, version FROM agora_schema").fetchall())
    db = sqlite_utils.Database(conn)
    for component, steps in plan(current, migrations, SQLITE):
        have = start = current.get(component, 0)
        for step in steps:
            if step.version <= have:
                continue
            try:
                if check is not None:
                    check()
                conn.execute("BEGIN IMMEDIATE")
                # Another process sharing the file may have applied it since we looked.
                row = conn.execute(
                    "SELECT version FROM agora_schema WHERE component = ?", (component,)
                ).fetchone()
                if row is not None and row[0] >= step.version:
                    conn.execute("ROLLBACK")
                    have = step.version
                    continue
                if step.apply is not None:
                    step.apply(db)
                else:
                    for sql in step.statements(SQLITE) or ():  # plan() saw them there
                        conn.execute(sql)
                conn.execute(
                    "INSERT INTO agora_schema (component, version) VALUES (?, ?) "
                    "ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                    (component, step.version),
                )
                if check is not None:
                    check()
                conn.execute("COMMIT")
            except Exception as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                applied(component, start, have)  # the steps before it are committed
                raise failed(step, exc) from exc
            have = step.version
        applied(component, start, have)
        current[component] = have
    return current
