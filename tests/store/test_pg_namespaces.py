"""Several agora clusters in one PostgreSQL database, one schema each: every one starts.

docs/scale-out.md's recipe puts each cluster in a schema of its own
(``options=-csearch_path%3Dteam_a%2Cpublic``). Before, the debate's migration created
``pg_trgm`` in the first schema on the path (team_a's) and named its operator class
unqualified, so the second cluster (team_b) failed to start: ``operator class
"gin_trgm_ops" does not exist for access method "gin"``; and a failed start left the
schema half migrated (the steps before the failing one committed). Now the extension lives
in ``public`` (or where it already is) and the index names its schema, and a start whose
migration fails leaves nothing. Each test runs in a fresh database of its own, without
pg_trgm (the suite's database has it in ``public`` already). Needs AGORA_TEST_PG.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

import pytest
import trio

from agora.errors import StoreError
from agora.store.migrations import Migration
from agora.toolsets.debate.sql.schema import MIGRATIONS

pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")

import psycopg

from agora.store.pg import open_pg_store

if TYPE_CHECKING:
    from collections.abc import Iterator

WAIT = 60


@pytest.fixture
def fresh_db(pg_url: str) -> Iterator[str]:
    """The URL (no options) of a new database, dropped at the end."""
    server = pg_url.split("?", 1)[0]
    name = f"agora_ns_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = server.rsplit("/", 1)[0] + f"/{name}"
    yield url
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _in(url: str, *path: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        for schema in path:
            if schema != "public":
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    return f"{url}?options=-csearch_path%3D{'%2C'.join(path)}"


def _tables(url: str, schema: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "ORDER BY table_name",
            (schema,),
        ).fetchall()
    return [r[0] for r in rows]


async def test_two_namespaces_in_one_database_each_migrate_the_debate(fresh_db):
    with trio.fail_after(WAIT):
        for path in (("team_a", "public"), ("team_b", "public"), ("team_c",)):
            async with open_pg_store(_in(fresh_db, *path), MIGRATIONS) as store:
                assert store.schema == path[0]
                assert store.versions["debate"] == len(MIGRATIONS)
    for schema in ("team_a", "team_b", "team_c"):
        assert "debate_messages" in _tables(fresh_db, schema), schema
    with psycopg.connect(fresh_db) as conn:
        (where,) = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'pg_trgm'"
        ).fetchone()
    assert where == "public"  # where every namespace finds it, not the first one's schema


async def test_a_migration_that_fails_leaves_its_namespace_empty(fresh_db):
    broken = Migration("broken", 1, sql={"postgresql": ["CREATE TABLE nope (x no_such_type)"]})
    url = _in(fresh_db, "team_d")
    with trio.fail_after(WAIT), pytest.raises(StoreError, match="migration broken v1 failed"):
        async with open_pg_store(url, [*MIGRATIONS, broken]):
            pass
    assert _tables(fresh_db, "team_d") == []  # before: the debate's tables and the core's
    async with open_pg_store(url, MIGRATIONS) as store:  # and it starts once fixed
        assert store.versions["debate"] == len(MIGRATIONS)


@pytest.mark.parametrize(
    ("path", "named"),
    [
        pytest.param("team_x%2Cpublic", "team_x", id="missing-then-public"),
        pytest.param("Team_X%2Cpublic", "team_x", id="unquoted-is-folded"),
        pytest.param("%22$user%22%2Cteam_y%2Cpublic", "team_y", id="after-absent-user-schema"),
    ],
)
async def test_a_search_path_naming_a_missing_schema_first_is_refused(fresh_db, path, named):
    """Before: the node started on ``public`` (PostgreSQL skips a missing schema), so a
    "team" following docs/scale-out.md without ``CREATE SCHEMA`` shared another's tables."""
    url = f"{fresh_db}?options=-csearch_path%3D{path}"
    with trio.fail_after(WAIT), pytest.raises(StoreError, match=f"CREATE SCHEMA {named}"):
        async with open_pg_store(url, MIGRATIONS):
            pass
    assert _tables(fresh_db, "public") == []  # nothing made in the schema it would have used


async def test_a_search_path_of_only_a_missing_schema_says_no_other_exists(fresh_db):
    # An operator's search_path named the missing schema alone; the refusal went on
    # "(else agora would use 'none', another namespace's tables)".
    url = f"{fresh_db}?options=-csearch_path%3Dteam_zz"
    with trio.fail_after(WAIT), pytest.raises(StoreError) as refused:
        async with open_pg_store(url, MIGRATIONS):
            pass
    message = str(refused.value)
    assert "CREATE SCHEMA team_zz" in message, message
    assert "'none'" not in message, message
    assert message.endswith("(no other schema on it exists either)"), message


async def test_a_role_without_privileges_is_told_what_to_grant(fresh_db):
    """An operator's finding: a login role that does not own the database (PostgreSQL 15
    grants no CREATE on ``public`` to everyone) was refused with a fragment of SQL
    ("permission denied for schema public LINE 1: CREATE TABLE ..."), then, once granted
    that, with pg_trgm's: one privilege per failed start, none of them named."""
    role = f"agora_np_{secrets.token_hex(4)}"
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        url = fresh_db.replace("//agora@", f"//{role}@", 1)
        assert url != fresh_db, fresh_db
        with trio.fail_after(WAIT), pytest.raises(StoreError) as refused:
            async with open_pg_store(url, MIGRATIONS):
                pass
        said = str(refused.value)
        assert "permission denied for schema public" in said, said
        # One line, naming the role and database in use (before: four lines, the last
        # proposing "CREATE DATABASE agora OWNER agora" whatever they were).
        assert "\n" not in said, said
        database = url.rsplit("/", 1)[1].split("?")[0]
        grants = (
            f"(role {role} lacks a privilege on database {database}: make it the owner (ALTER"
            f" DATABASE {database} OWNER TO {role}), or GRANT CONNECT, CREATE ON DATABASE"
            f" {database} TO {role} (CREATE: for pg_trgm) and GRANT USAGE, CREATE ON SCHEMA"
            f' public TO {role}; see docs/scale-out.md, "The role and the database")'
        )
        assert said.endswith(grants), said
        with psycopg.connect(fresh_db, autocommit=True) as conn:
            conn.execute(f'GRANT CREATE ON SCHEMA public TO "{role}"')
        with trio.fail_after(WAIT), pytest.raises(StoreError) as refused:
            async with open_pg_store(url, MIGRATIONS):
                pass
        said = str(refused.value)
        assert 'permission denied to create extension "pg_trgm"' in said, said
        assert "\n" not in said, said
        assert said.endswith(grants), said
    finally:
        with psycopg.connect(fresh_db, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
        server = fresh_db.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


async def test_a_role_refused_in_a_namespace_schema_is_told_about_that_schema(fresh_db):
    """A tester's finding: with the tables in a namespace's schema (docs/scale-out.md,
    "Namespaces"; a superuser created it, so owns it), the refusal offered "make it the
    owner (ALTER DATABASE ... OWNER TO ...)" first; done, the start was refused the same:
    owning the database gives no CREATE on a schema another role owns."""
    role = f"agora_ns_{secrets.token_hex(4)}"
    database = fresh_db.rsplit("/", 1)[1]
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute("CREATE SCHEMA s3")
        conn.execute(f'GRANT USAGE ON SCHEMA s3 TO "{role}"')
        conn.execute(f'ALTER DATABASE "{database}" OWNER TO "{role}"')  # the old advice
    try:
        url = fresh_db.replace("//agora@", f"//{role}@", 1) + "?options=-csearch_path%3Ds3"
        with trio.fail_after(WAIT), pytest.raises(StoreError) as refused:
            async with open_pg_store(url, MIGRATIONS):
                pass
        said = str(refused.value)
        assert "permission denied for schema s3" in said, said
        assert "\n" not in said, said
        assert "ALTER DATABASE" not in said, said
        assert said.endswith(
            f"(role {role} lacks a privilege on database {database} or its schema s3: GRANT"
            f" CONNECT, CREATE ON DATABASE {database} TO {role} (CREATE: for pg_trgm) and GRANT"
            f" USAGE, CREATE ON SCHEMA s3 TO {role}, or make it the owner of schema s3 (ALTER"
            f' SCHEMA s3 OWNER TO {role}); see docs/scale-out.md, "The role and the database")'
        ), said
        with psycopg.connect(fresh_db, autocommit=True) as conn:
            conn.execute(f'ALTER SCHEMA s3 OWNER TO "{role}"')  # the advice works
        with trio.fail_after(WAIT):
            async with open_pg_store(url, MIGRATIONS) as store:
                assert store.schema == "s3"
    finally:
        with psycopg.connect(fresh_db, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{database}" OWNER TO CURRENT_USER')
            conn.execute(f'DROP OWNED BY "{role}"')
        server = fresh_db.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


async def test_a_role_refused_connect_is_told_what_to_grant(fresh_db):
    """A tester's finding: a role without CONNECT on the database got PostgreSQL's words
    alone, no grant and no pointer to the docs, as docs/scale-out.md promises for a start
    refused for a privilege (libpq's log-in failure carries no SQLSTATE)."""
    role = f"agora_nc_{secrets.token_hex(4)}"
    database = fresh_db.rsplit("/", 1)[1]
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'REVOKE CONNECT ON DATABASE "{database}" FROM PUBLIC')
    try:
        url = fresh_db.replace("//agora@", f"//{role}@", 1)
        with trio.fail_after(WAIT), pytest.raises(StoreError) as refused:
            async with open_pg_store(url, MIGRATIONS):
                pass
        said = str(refused.value)
        assert "User does not have CONNECT privilege." in said, said  # PostgreSQL's first
        assert "\n" not in said, said
        assert said.endswith(
            f"(role {role} lacks CONNECT on database {database}: GRANT CONNECT ON DATABASE"
            f' {database} TO {role}; see docs/scale-out.md, "The role and the database")'
        ), said
    finally:
        server = fresh_db.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')
