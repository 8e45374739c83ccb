"""The router's tables: migrations, every statement it runs, and reading one run back.

Tables: ``router_runs`` (one row per workflow run: session, CAS state version, plan revision,
status, the plan result as JSON), ``router_work_items`` (the work graph), ``router_events``
(append-only reported observations), ``router_gates`` (gate evaluations),
``router_proposals`` (support-consent proposals and decisions), ``router_consent_audit``
(refused consent transitions), ``router_versions`` (each state version a run took after its
first, unique: the CAS guard that holds across processes sharing the database; the first is
guarded by the run's own insert), ``router_records``
(evaluation runs, comparisons and exports, immutable) and ``router_ledger`` (each
idempotency key's request digest and result, for replay; keyed by run or record id). JSON
is stored as TEXT and parsed in Python; timestamps are fixed-width UTC TEXT; statements use
``?`` placeholders only. This module builds statements and reads rows; it never commits
(the actor does).
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import TYPE_CHECKING, Any

from agora.toolsets.base import Migration
from agora.toolsets.router import memory_sql

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agora.runtime.entity import Write
    from agora.store.neutral import ReadConn


def stamp(when: dt.datetime) -> str:
    """A fixed-width UTC timestamp, e.g. ``2026-11-30T15:00:00.000000Z``."""
    if when.tzinfo is dt.UTC:  # the system clock's: "...+00:00" -> "...Z", one call
        return when.isoformat(timespec="microseconds")[:-6] + "Z"
    utc = when.astimezone(dt.UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds") + "Z"  # what strftime writes, 4x faster


_SCHEMA = [
    """CREATE TABLE router_runs (
        run_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
        state_version BIGINT NOT NULL, plan_revision BIGINT NOT NULL, status TEXT NOT NULL,
        envelope TEXT NOT NULL, goal_binding_id TEXT, work_graph_id TEXT,
        explicit_locked BIGINT NOT NULL, item_count BIGINT NOT NULL, plan_json TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL)""",
    "CREATE INDEX router_runs_session ON router_runs (session_id, goal_binding_id)",
    """CREATE TABLE router_work_items (
        run_id TEXT NOT NULL, seq BIGINT NOT NULL, work_item_id TEXT NOT NULL,
        phase_id TEXT NOT NULL, primary_skill_id TEXT, support_json TEXT NOT NULL,
        dependency_json TEXT NOT NULL, gate_id TEXT NOT NULL, check_ids_json TEXT NOT NULL,
        status TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE router_events (
        run_id TEXT NOT NULL, seq BIGINT NOT NULL, event_id TEXT NOT NULL,
        phase_id TEXT NOT NULL, observation_json TEXT NOT NULL, correlation_id TEXT NOT NULL,
        recorded_at TEXT NOT NULL, PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE router_gates (
        run_id TEXT NOT NULL, seq BIGINT NOT NULL, phase_id TEXT NOT NULL,
        evidence_digest TEXT NOT NULL, passed BIGINT NOT NULL, failures_json TEXT NOT NULL,
        evaluated_at TEXT NOT NULL, PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE router_proposals (
        proposal_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, phase_id TEXT NOT NULL,
        primary_skill_id TEXT NOT NULL, support_json TEXT NOT NULL,
        scope_anchor_id TEXT NOT NULL, goal_revision BIGINT, plan_revision BIGINT NOT NULL,
        context_fingerprint TEXT NOT NULL, status TEXT NOT NULL, decision_ref TEXT,
        created_at TEXT NOT NULL, decided_at TEXT)""",
    "CREATE INDEX router_proposals_run ON router_proposals (run_id)",
    """CREATE TABLE router_consent_audit (
        run_id TEXT NOT NULL, seq BIGINT NOT NULL, proposal_id TEXT NOT NULL,
        refusal TEXT NOT NULL, stale_json TEXT NOT NULL, correlation_id TEXT NOT NULL,
        at TEXT NOT NULL, PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE router_ledger (
        run_id TEXT NOT NULL, idempotency_key TEXT NOT NULL, request_digest TEXT NOT NULL,
        result_json TEXT NOT NULL, created_at TEXT NOT NULL,
        PRIMARY KEY (run_id, idempotency_key))""",
]


_V2 = [
    # Evaluation runs, comparisons and exports: immutable documents, replayed via the ledger.
    """CREATE TABLE router_records (
        record_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL,
        document_json TEXT NOT NULL, created_at TEXT NOT NULL)""",
]
_V3 = [
    # One row per state version of a run: a second writer of the same version fails its
    # whole commit, whoever it is.
    """CREATE TABLE router_versions (
        run_id TEXT NOT NULL, state_version BIGINT NOT NULL, idempotency_key TEXT NOT NULL,
        at TEXT NOT NULL, PRIMARY KEY (run_id, state_version))""",
]


def _both(statements: list[str]) -> dict[str, list[str]]:
    # The statements are written once, in the SQL both backends accept.
    return {"sqlite": statements, "postgresql": statements}


_V4 = [
    # The run's routing identifiers (domains, tags), which Memory may retain as matchers.
    "ALTER TABLE router_runs ADD COLUMN routing_json TEXT",
]


_V6 = [
    # Servers before approvals wrote the work item kept an approved support set only on its
    # proposal. Each work item of a run with an approval takes its phase's latest approved
    # set, as `consent.transition` would have written it: latest in command order (the state
    # version claimed at the decision's time; runs older than step 3 claimed none), then by
    # decision time. Rejected and undecided proposals do not count.
    """UPDATE router_work_items SET support_json = COALESCE((
        SELECT p.support_json FROM router_proposals p
        WHERE p.run_id = router_work_items.run_id AND p.phase_id = router_work_items.phase_id
            AND p.status = 'approved'
        ORDER BY COALESCE((SELECT MAX(v.state_version) FROM router_versions v
                           WHERE v.run_id = p.run_id AND v.at = p.decided_at), 0) DESC,
            p.decided_at DESC, p.proposal_id DESC
        LIMIT 1), support_json)
    WHERE run_id IN (SELECT run_id FROM router_proposals WHERE status = 'approved')""",
]


MIGRATIONS = (
    Migration(component="router", version=1, sql=_both(_SCHEMA)),
    Migration(component="router", version=2, sql=_both(_V2)),
    Migration(component="router", version=3, sql=_both(_V3)),
    Migration(component="router", version=4, sql=_both(_V4)),
    memory_sql.V5,
    Migration(component="router", version=6, sql=_both(_V6)),
)


_INSERT_RUN = (
    "INSERT INTO router_runs (run_id, session_id, idempotency_key, state_version,"
    " plan_revision, status, envelope, goal_binding_id, work_graph_id, explicit_locked,"
    " item_count, plan_json, routing_json, created_at, updated_at)"
    " VALUES (?, ?, ?, 1, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def insert_run(run_id: str, session: str, key: str, status: str, envelope: str,
               goal: str | None, graph: str | None, locked: bool, items: int, plan: str,
               routing: str, at: str) -> Write:  # fmt: skip
    """Create a run row at state version 1 and plan revision 1 (``plan`` and ``routing``:
    JSON text)."""
    params = (run_id, session, key, status, envelope, goal, graph, int(locked), items, plan,
              routing, at, at)  # fmt: skip
    return (_INSERT_RUN, params)


def update_run(run_id: str, version: int, status: str, at: str, previous: int) -> Write:
    """Move a run to ``version`` and ``status``, only from state version ``previous``."""
    return (
        "UPDATE router_runs SET state_version = ?, status = ?, updated_at = ?"
        " WHERE run_id = ? AND state_version = ?",
        (version, status, at, run_id, previous),
    )


def claim_version(run_id: str, version: int, key: str, at: str) -> Write:
    """Claim a run's next state version; fails the transaction if it was already taken."""
    return (
        "INSERT INTO router_versions (run_id, state_version, idempotency_key, at)"
        " VALUES (?, ?, ?, ?)",
        (run_id, version, key, at),
    )


_ITEM_COLUMNS = (
    "run_id, seq, work_item_id, phase_id, primary_skill_id, support_json, dependency_json,"
    " gate_id, check_ids_json, status, updated_at"
)


@functools.lru_cache(maxsize=16)
def _insert_items_sql(count: int) -> str:
    rows = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * count)
    return f"INSERT INTO router_work_items ({_ITEM_COLUMNS}) VALUES {rows}"


def insert_items(run_id: str, items: list[tuple[Any, ...]], at: str) -> Write:
    """Create a run's work items in one statement; each item is ``(seq, work_item_id,
    phase_id, primary_skill_id, support_json, dependency_json, gate_id, check_ids_json,
    status)``."""
    params = tuple(v for item in items for v in (run_id, *item, at))
    return (_insert_items_sql(len(items)), params)


def update_items(run_id: str, changes: list[tuple[int, str]], at: str) -> Write:
    """Set the status of one or more work items, ``changes`` being ``(seq, status)`` pairs,
    in one statement."""
    if len(changes) == 1:
        ((seq, status),) = changes
        return (
            "UPDATE router_work_items SET status = ?, updated_at = ? WHERE run_id = ? AND seq = ?",
            (status, at, run_id, seq),
        )
    return (
        _update_items_sql(len(changes)),
        (*(v for change in changes for v in change), at, run_id, *(seq for seq, _ in changes)),
    )


def set_item_supports(run_id: str, seq: int, support_json: str, at: str) -> Write:
    """Set a work item's support skills (an approved consent's set)."""
    return (
        "UPDATE router_work_items SET support_json = ?, updated_at = ?"
        " WHERE run_id = ? AND seq = ?",
        (support_json, at, run_id, seq),
    )


@functools.lru_cache(maxsize=16)
def _update_items_sql(count: int) -> str:
    cases = " ".join(["WHEN ? THEN ?"] * count)
    marks = ", ".join(["?"] * count)
    return (
        f"UPDATE router_work_items SET status = CASE seq {cases} END, updated_at = ?"
        f" WHERE run_id = ? AND seq IN ({marks})"
    )


def insert_event(run_id: str, seq: int, event_id: str, phase: str, obs: str, corr: str,
                 at: str) -> Write:  # fmt: skip
    """Append one reported observation."""
    return (
        "INSERT INTO router_events (run_id, seq, event_id, phase_id, observation_json,"
        " correlation_id, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (run_id, seq, event_id, phase, obs, corr, at),
    )


def insert_gate(run_id: str, seq: int, phase: str, digest: str, passed: bool, failures: str,
                at: str) -> Write:  # fmt: skip
    """Record one gate evaluation."""
    return (
        "INSERT INTO router_gates (run_id, seq, phase_id, evidence_digest, passed,"
        " failures_json, evaluated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (run_id, seq, phase, digest, int(passed), failures, at),
    )


def insert_proposal(row: dict[str, Any]) -> Write:
    """Create a proposal row (``row`` has every column)."""
    cols = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    return (f"INSERT INTO router_proposals ({cols}) VALUES ({marks})", tuple(row.values()))


def decide_proposal(proposal_id: str, status: str, ref: str, at: str) -> Write:
    """Record the user's decision on a proposal that was still awaiting one."""
    return (
        "UPDATE router_proposals SET status = ?, decision_ref = ?, decided_at = ?"
        " WHERE proposal_id = ? AND status = 'proposal-required'",
        (status, ref, at, proposal_id),
    )


def insert_audit(run_id: str, seq: int, proposal: str, refusal: str, stale: str, corr: str,
                 at: str) -> Write:  # fmt: skip
    """Keep a refused consent transition for audit."""
    return (
        "INSERT INTO router_consent_audit (run_id, seq, proposal_id, refusal, stale_json,"
        " correlation_id, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (run_id, seq, proposal, refusal, stale, corr, at),
    )


def insert_ledger(run_id: str, key: str, request_digest: str, result: str, at: str) -> Write:
    """Remember an idempotency key's request and result (a second insert is a no-op)."""
    return (
        "INSERT INTO router_ledger (run_id, idempotency_key, request_digest, result_json,"
        " created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (run_id, key, request_digest, result, at),
    )


def insert_record(record_id: str, session: str, kind: str, document: str, at: str) -> Write:
    """Create an immutable evaluation record (a second insert of the same id is a no-op)."""
    return (
        "INSERT INTO router_records (record_id, session_id, kind, document_json, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (record_id, session, kind, document, at),
    )


def read_record(conn: ReadConn, record_id: str) -> dict[str, Any] | None:
    """An evaluation record and its ledger, raw; None if there is none."""
    row = conn.execute(
        "SELECT session_id, kind, document_json FROM router_records WHERE record_id = ?",
        (record_id,),
    ).fetchone()
    if row is None:
        return None
    ledger = [tuple(r) for r in conn.execute(_READS["ledger"], (record_id,))]
    return {"record": tuple(row), "ledger": ledger}


_RUN_COLUMNS = (
    "run_id, session_id, idempotency_key, state_version, plan_revision, status, envelope,"
    " goal_binding_id, work_graph_id, explicit_locked, item_count, plan_json, routing_json"
)
_READS = {
    "items": "SELECT seq, work_item_id, phase_id, primary_skill_id, support_json,"
    " dependency_json, gate_id, check_ids_json, status FROM router_work_items"
    " WHERE run_id = ? ORDER BY seq",
    "events": "SELECT seq, event_id, phase_id, observation_json FROM router_events"
    " WHERE run_id = ? ORDER BY seq",
    "gates": "SELECT COUNT(*) FROM router_gates WHERE run_id = ?",
    "proposals": "SELECT proposal_id, phase_id, primary_skill_id, support_json,"
    " scope_anchor_id, goal_revision, plan_revision, context_fingerprint, status, decision_ref"
    " FROM router_proposals WHERE run_id = ?",
    "audit": "SELECT COUNT(*) FROM router_consent_audit WHERE run_id = ?",
    "ledger": "SELECT idempotency_key, request_digest, result_json FROM router_ledger"
    " WHERE run_id = ?",
}


def read_run(conn: ReadConn, run_id: str) -> dict[str, Any] | None:
    """Every committed row of one run, raw (parsing and checks are the entity's job).

    Returns:
        ``{"run": tuple, "items": [...], "events": [...], "gates": int, "proposals":
        [...], "audit": int, "ledger": [...]}``, or None if there is no such run.
    """
    run = conn.execute(
        f"SELECT {_RUN_COLUMNS} FROM router_runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    if run is None:
        return None
    out: dict[str, Any] = {"run": tuple(run)}
    for name, statement in _READS.items():
        rows = [tuple(r) for r in conn.execute(statement, (run_id,))]
        out[name] = rows[0][0] if name in ("gates", "audit") else rows
    return out


def run_ids(conn: ReadConn) -> Iterator[str]:
    """The id of every stored run, streamed (`agora.toolsets.router.index` scans them)."""
    for row in conn.execute("SELECT run_id FROM router_runs"):
        yield str(row[0])


#: Most runs a session-wide status names (newest first).
RECENT_RUNS = 10


def session_summary(
    conn: ReadConn, session_id: str, goal_binding_id: str | None, limit: int = RECENT_RUNS
) -> tuple[int, int, list[tuple[str, str, int, int, str, str | None]]]:
    """Runs and work items of a session (of one goal binding when given), and its ``limit``
    newest runs, newest first.

    Returns:
        ``(runs, work_items, newest)``, each of ``newest`` ``(run_id, status, state_version,
        item_count, created_at, goal_binding_id)``.
    """
    where = "session_id = ?" + (" AND goal_binding_id = ?" if goal_binding_id else "")
    params: tuple[Any, ...] = (session_id, goal_binding_id) if goal_binding_id else (session_id,)
    runs, items = conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM(item_count), 0) FROM router_runs WHERE {where}", params
    ).fetchone()
    rows = conn.execute(
        "SELECT run_id, status, state_version, item_count, created_at, goal_binding_id"
        " FROM router_runs"
        f" WHERE {where} ORDER BY created_at DESC, run_id DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    newest = [
        (str(r[0]), str(r[1]), int(r[2]), int(r[3]), str(r[4]), None if r[5] is None else str(r[5]))
        for r in rows
    ]
    return int(runs), int(items), newest
