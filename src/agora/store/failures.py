"""Which store failures a retry can cure, and which it cannot.

A write or read fails for one of two kinds of reason. *Transient*: the database is busy or
locked, its disk is full or failing, its connection was lost, a statement timed out, a
serialization conflict; the same call made again can succeed, and the caller is told to
retry. *Permanent*: the statement itself is wrong for the database it runs on (a constraint
violation, a syntax error, a missing table or column, a value of the wrong type); the same
call fails the same way for ever, so telling the caller to retry only makes it loop. Such a
failure is a bug (in a toolset's SQL, or a schema changed under the server) and is answered
as one: `agora.errors.StoreError.permanent`, then the server's internal-error answer.

SQLite says which by its result code (``sqlite_errorcode``, whose low byte is the primary
code); PostgreSQL by its SQLSTATE (``sqlstate``), whose first two characters are the class.
Anything else a job raised (a value the driver cannot bind, a parameter that cannot be
pickled for the writer's child process) is permanent too; a failure the store made itself
(`StoreError`: a deadline passed, a connection broke, the store is closed) keeps its own
flag, which is transient unless said otherwise. This module imports neither trio nor psycopg:
it reads the attributes the drivers set.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from agora.errors import StoreError

# SQLite's primary result codes that a retry can cure: ABORT (a statement rolled back by
# another's failure), BUSY, LOCKED, NOMEM, READONLY (a file system made read-only, or a
# database opened read-only for now), INTERRUPT, IOERR, FULL, CANTOPEN, PROTOCOL (a
# locking race on the WAL) and SCHEMA (another connection changed the schema: prepare again).
_SQLITE_TRANSIENT: Final = frozenset({4, 5, 6, 7, 8, 9, 10, 13, 14, 15, 17})

# PostgreSQL's SQLSTATE classes that a retry can cure: 08 connection exception, 40
# transaction rollback (serialization failure, deadlock), 53 insufficient resources (disk
# full, out of memory, too many connections), 57 operator intervention (shutdown, a query
# cancelled by statement_timeout), 58 system error (I/O), 72 snapshot too old.
_PG_TRANSIENT_CLASSES: Final = frozenset({"08", "40", "53", "57", "58", "72"})
# And single codes in other classes: 25006 read-only transaction (a standby, a failover),
# 25P03 idle in transaction timeout, 55P03 lock not available, 55006 object in use.
_PG_TRANSIENT_CODES: Final = frozenset({"25006", "25P03", "55P03", "55006"})

# Drivers' classes for a failure with no code from the database: the connection or the
# driver's link to it failed (psycopg raises these without a SQLSTATE when libpq cannot
# reach the server, or the connection is closed).
_LINK_FAILURES: Final = frozenset({"OperationalError", "InterfaceError"})


def is_permanent(exc: BaseException) -> bool:
    """Whether retrying the call that failed with ``exc`` cannot help (see the module)."""
    if isinstance(exc, StoreError):
        return exc.permanent
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is None:  # raised by the driver, not by SQLite
            return not isinstance(exc, sqlite3.OperationalError)
        return (code & 0xFF) not in _SQLITE_TRANSIENT
    sqlstate = getattr(exc, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate:
        return sqlstate[:2] not in _PG_TRANSIENT_CLASSES and sqlstate not in _PG_TRANSIENT_CODES
    if isinstance(exc, OSError):
        return False
    return not any(cls.__name__ in _LINK_FAILURES for cls in type(exc).__mro__)


def detail(exc: BaseException) -> str:
    """``exc`` as the operator needs it: its class, the database's code, its message, and
    the notes the writers add (the statement that failed, never its parameters)."""
    code = getattr(exc, "sqlstate", None) or getattr(exc, "sqlite_errorname", None)
    head = f"{type(exc).__name__} {code}" if code else type(exc).__name__
    notes = getattr(exc, "__notes__", None) or ()
    return "; ".join([f"{head}: {exc}", *notes])


def store_error(action: str, exc: BaseException) -> StoreError:
    """The `StoreError` a caller gets for ``exc``, raised while ``action`` ("write failed",
    "read failed"): classified, and when permanent worded for the operator's log (the
    caller's client sees a fixed text instead)."""
    if is_permanent(exc):
        error = StoreError(f"{action}: {detail(exc)}", permanent=True)
    else:
        error = StoreError(f"{action}: {exc}")
    error.__cause__ = exc
    return error
