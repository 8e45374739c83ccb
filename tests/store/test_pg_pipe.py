"""`Pipe`: statements through libpq's pipeline, parameters sent as psycopg would send them.

Values go in through the pipe and come back through psycopg unchanged (quotes, backslashes,
NUL bytes, huge integers, NaN); array literals survive awkward elements; ``:name`` reuses
one parameter; the first failing statement raises psycopg's own error and the statements
after it do not run; a statement whose Prepare was skipped by a failure is prepared again;
a parameter of another type is refused before anything is sent. Sync tests on the server
named by AGORA_TEST_PG (a fresh schema each, `pg_url`).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")

from agora.store.pg_pipe import Pipe, Unsupported, native  # noqa: E402 - needs psycopg
from agora.store.pg_sql import connect  # noqa: E402

ROW = "INSERT INTO vals (t, i, f, b, n) VALUES (?, ?, ?, ?, ?)"


@pytest.fixture
def conn(pg_url: str) -> Any:
    with connect(pg_url) as c:
        c.execute("CREATE TABLE vals (t TEXT, i NUMERIC, f DOUBLE PRECISION, b BYTEA, n BIGINT)")
        c.execute("CREATE TABLE once (k TEXT PRIMARY KEY)")
        yield c


def run(conn: Any, *statements: tuple[str, Any]) -> list[Any]:
    pipe = Pipe(conn)
    return pipe.run([pipe.wire(sql, params) for sql, params in statements])


@pytest.mark.parametrize(
    ("sql", "named", "expected"),
    [
        pytest.param("SELECT ?, ?", False, (b"SELECT $1, $2", ()), id="positional"),
        pytest.param("SELECT '?', ?::text", False, (b"SELECT '?', $1::text", ()), id="literal"),
        pytest.param("SELECT :a, :b, :a", True, (b"SELECT $1, $2, $1", ("a", "b")), id="named"),
        pytest.param("SELECT 5 % 2, ?", False, (b"SELECT 5 % 2, $1", ()), id="percent"),
    ],
)
def test_placeholders_become_numbered(sql: str, named: bool, expected: Any) -> None:
    assert native(sql, named) == expected


def test_values_come_back_as_they_went(conn: Any) -> None:
    rows: list[tuple[Any, ...]] = [
        ('it\'s a \\ "quote"', 2**70, 1.5, b"\x00\xff", True),
        ("é ☃", -(2**40), float("inf"), b"", False),
        ("", 7, float("nan"), None, None),
    ]
    run(conn, *[(ROW, r) for r in rows])
    got = conn.execute("SELECT t, i, f, b, n FROM vals ORDER BY n NULLS LAST, t").fetchall()
    assert [tuple(r) for r in got[:2]] == [
        ("é ☃", -(2**40), float("inf"), b"", 0),
        ('it\'s a \\ "quote"', 2**70, 1.5, b"\x00\xff", 1),
    ]
    assert got[2][0] == ""
    assert math.isnan(got[2][2])
    assert got[2][3] is None


def test_arrays_and_named_parameters(conn: Any) -> None:
    awkward = ['a"b', "c\\d", "e,f", "{g}", "NULL", ""]
    [res] = run(conn, ("SELECT array_length(?::text[], 1), ?::bigint[]", (awkward, [1, 2])))
    assert res.get_value(0, 0) == b"6"
    assert res.get_value(0, 1) == b"{1,2}"
    run(conn, ("INSERT INTO vals (t, n) SELECT t, :n FROM unnest(:ts::text[]) AS t",
               {"n": 3, "ts": awkward}))  # fmt: skip
    assert [r[0] for r in conn.execute("SELECT t FROM vals WHERE n = 3 ORDER BY t")] == sorted(
        awkward
    )


def test_a_statement_prepared_in_a_failed_pipeline_is_prepared_again(conn: Any) -> None:
    pipe = Pipe(conn)
    pipe.run([pipe.wire("SELECT 1", ())])
    insert_once = pipe.wire("INSERT INTO once (k) VALUES (?)", ("y",))
    pipe.run([insert_once])
    # Both are new: the first one's Prepare runs, then the duplicate key fails the pipeline
    # before the second's Prepare does. Both go again, under names not used before.
    first = pipe.wire("INSERT INTO vals (t) VALUES (?)", ("one",))
    second = pipe.wire("INSERT INTO vals (n) VALUES (?)", (2,))
    with pytest.raises(psycopg.errors.UniqueViolation):
        pipe.run([first, insert_once, second])
    pipe.run([first, second])
    assert conn.execute("SELECT count(*) FROM vals").fetchone()[0] == 2


def test_the_first_failure_is_raised_and_the_rest_does_not_run(conn: Any) -> None:
    pipe = Pipe(conn)
    insert_once = pipe.wire("INSERT INTO once (k) VALUES (?)", ("x",))
    pipe.run([insert_once])
    fresh = pipe.wire("INSERT INTO vals (t) VALUES (?)", ("after",))  # first use: a Prepare
    with pytest.raises(psycopg.errors.UniqueViolation):
        pipe.run([insert_once, fresh])
    assert conn.execute("SELECT count(*) FROM vals").fetchone()[0] == 0
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    pipe.run([fresh])  # its Prepare was skipped: prepared again, not "does not exist"
    assert conn.execute("SELECT t FROM vals").fetchone()[0] == "after"


def test_a_parameter_of_another_type_is_refused_before_sending(conn: Any) -> None:
    with pytest.raises(Unsupported, match="Decimal"):
        Pipe.wire("INSERT INTO vals (i) VALUES (?)", (Decimal("1.5"),))
    with pytest.raises(Unsupported, match="float"):
        Pipe.wire("SELECT ?::text[]", ([1.5],))
