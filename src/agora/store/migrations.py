"""Versioned schema migrations, applied at open time in one transaction per step.

Each component (the core, each toolset) keeps its own version in `agora_schema`. Opening an
older file upgrades it; a file from a newer agora (a version we do not know) is refused.
This module runs synchronously on the writer connection before the writer thread starts.

A step is written per dialect: ``apply`` (a function of a ``sqlite_utils.Database``) or
``sql["sqlite"]`` for SQLite, ``sql["postgresql"]`` (a list of statements) for PostgreSQL.
The PostgreSQL side is applied by `agora.store.pg` with the same versions table.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import sqlite_utils

from agora.errors import StoreError

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterable, Mapping, Sequence


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
    current: dict[str, int], migrations: Iterable[Migration]
) -> list[tuple[str, list[Migration]]]:
    """Each component's steps, sorted; refuses a schema newer than the newest known step.

    Raises:
        StoreError: a component's stored version is newer than this agora's, or two steps
            of one component have one version (say, a toolset that took another's
            component name): one of them would never run.
    """
    by_component: dict[str, list[Migration]] = defaultdict(list)
    for m in migrations:
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
                f"the database has {component} schema v{have}, newer than this agora's v{newest}"
            )
        out.append((component, steps))
    return out


def apply_migrations(conn: sqlite3.Connection, migrations: Iterable[Migration]) -> dict[str, int]:
    """Bring every component's tables up to its newest migration.

    Args:
        conn: The writer connection (autocommit mode).
        migrations: All known migrations, any order.

    Returns:
        The version of each component after migrating.

    Raises:
        StoreError: if the file holds a newer schema than this agora knows, or a step fails.
    """
    conn.execute(
        "CREATE TABLE IF NOT EXISTS agora_schema "
        "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
    )
    current = dict(conn.execute("SELECT component, version FROM agora_schema").fetchall())
    db = sqlite_utils.Database(conn)
    for component, steps in plan(current, migrations):
        have = current.get(component, 0)
        for step in steps:
            if step.version <= have:
                continue
            try:
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
                    for sql in step.statements("sqlite") or ():
                        conn.execute(sql)
                conn.execute(
                    "INSERT INTO agora_schema (component, version) VALUES (?, ?) "
                    "ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                    (component, step.version),
                )
                conn.execute("COMMIT")
            except Exception as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(f"migration {component} v{step.version} failed: {exc}") from exc
            have = step.version
        current[component] = have
    return current
