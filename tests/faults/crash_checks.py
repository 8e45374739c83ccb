"""What a database must hold after a SIGKILL: the client's acknowledgements and whole changes.

`check_database` reads the killed server's SQLite file (the process is gone, so nothing else
writes), `check_pg` the PostgreSQL database several nodes share (in one snapshot), and each
returns every broken promise as a sentence:

- every acknowledged write is present: debate messages with the very body acknowledged
  (and exactly one delivery row for their one recipient), router runs at least at the
  acknowledged state version, chamber actions up to the acknowledged index, cards;
- no half-applied multi-row change: a router run's state version, its idempotency ledger and
  its event and gate rows agree (``version == ledger rows == 1 + events + gates``); a chamber
  attempt's action counter and head agree with its transcript rows; a sealed attempt has its
  card and a card its sealed attempt; a debate message has its delivery rows;
- what was sealed stays sealed: `Frozen` remembers every card's document and every debate
  message's row the first time it sees them and says when one changed.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

#: Refusals an actor may meet after a kill: its last write may have committed unacknowledged
#: (a stale version or index), or its cursor may be behind (a shared cursor); and the chamber
#: limits entries per principal and minute.
EXPECTED_REFUSALS = (
    "conflict",
    "stale",
    "regressive",
    "index",
    "version",
    "expired",
    "sealed",
    "rate-limited",
)
#: The writers whose progress after the kills shows the load resumed.
WRITERS = ("debate_message", "router_gate", "chamber_action")


def resumed_problems(
    records: list[dict[str, Any]],
    before: Counter[str],
    refusals: dict[str, int],
    last_refusal: object,
    expected: tuple[str, ...] = EXPECTED_REFUSALS,
) -> list[str]:
    """What says the load did not come back whole: a kind of writer that made no progress
    since ``before`` (a count of acknowledgements by kind), or a refusal outside ``expected``."""
    progress = Counter(a["kind"] for a in records) - before
    problems = [f"{kind} writers did not resume" for kind in WRITERS if progress[kind] <= 0]
    unexpected = {
        code: count
        for code, count in refusals.items()
        if not any(word in code.lower() for word in expected)
    }
    if unexpected:
        problems.append(f"refusals: {unexpected}; e.g. {last_refusal}")
    return problems


@dataclass
class Frozen:
    """Rows that must never change once written (cards, debate messages), by key."""

    rows: dict[tuple[str, str], Any] = field(default_factory=dict)

    def compare(self, kind: str, key: str, value: Any, problems: list[str]) -> None:
        seen = self.rows.setdefault((kind, key), value)
        if seen != value:
            problems.append(f"{kind} {key} changed after it was written")


def _acked(conn: Any, acks: list[dict[str, Any]], problems: list[str]) -> None:
    for ack in acks:
        match ack["kind"]:
            case "debate_message":
                row = conn.execute(
                    "SELECT body FROM debate_messages WHERE msg_id = ?", (ack["msg_id"],)
                ).fetchone()
                if row is None or row[0] != ack["body"]:
                    problems.append(f"acknowledged debate message {ack['msg_id']} is {row}")
            case "router_run" | "router_gate":
                row = conn.execute(
                    "SELECT state_version FROM router_runs WHERE run_id = ?", (ack["run_id"],)
                ).fetchone()
                if row is None or row[0] < ack["version"]:
                    problems.append(f"acknowledged router {ack} but the run is {row}")
            case "chamber_action":
                row = conn.execute(
                    "SELECT count(*) FROM chamber_actions WHERE handle = ?", (ack["handle"],)
                ).fetchone()
                if row[0] < ack["action_index"]:
                    problems.append(f"acknowledged {ack} but {row[0]} actions are stored")
            case "chamber_card":
                row = conn.execute(
                    "SELECT 1 FROM chamber_cards WHERE card_id = ?", (ack["card_id"],)
                ).fetchone()
                if row is None:
                    problems.append(f"acknowledged card {ack['card_id']} is missing")


def _whole(conn: Any, problems: list[str]) -> None:
    runs = conn.execute(
        "SELECT r.run_id, r.state_version,"
        " (SELECT count(*) FROM router_ledger l WHERE l.run_id = r.run_id),"
        " (SELECT count(*) FROM router_events e WHERE e.run_id = r.run_id),"
        " (SELECT count(*) FROM router_gates g WHERE g.run_id = r.run_id)"
        " FROM router_runs r"
    ).fetchall()
    for run_id, version, ledger, events, gates in runs:
        if not version == ledger == 1 + events + gates:
            problems.append(
                f"router run {run_id} half applied: version {version}, ledger {ledger},"
                f" events {events}, gates {gates}"
            )
    attempts = conn.execute(
        "SELECT t.handle, t.action_index, t.head, t.card_id,"
        " (SELECT count(*) FROM chamber_actions a WHERE a.handle = t.handle),"
        " (SELECT a.head FROM chamber_actions a WHERE a.handle = t.handle"
        "  ORDER BY a.idx DESC LIMIT 1),"
        " (SELECT count(*) FROM chamber_cards c WHERE c.handle = t.handle)"
        " FROM chamber_attempts t"
    ).fetchall()
    for handle, index, head, card, actions, last_head, cards in attempts:
        if index != actions or (actions and head != last_head):
            problems.append(f"chamber attempt {handle}: counter {index}, {actions} actions")
        if (card is not None) != (cards == 1):
            problems.append(f"chamber attempt {handle}: card_id {card} but {cards} card rows")
    orphans = conn.execute(
        "SELECT count(*) FROM debate_deliveries d"
        " WHERE NOT EXISTS (SELECT 1 FROM debate_messages m WHERE m.msg_id = d.msg_id)"
    ).fetchone()[0]
    if orphans:
        problems.append(f"{orphans} debate deliveries without their message")


def _addressed(conn: Any, acks: list[dict[str, Any]], problems: list[str]) -> None:
    for ack in acks:
        if ack["kind"] == "debate_message":
            n = conn.execute(
                "SELECT count(*) FROM debate_deliveries WHERE msg_id = ?", (ack["msg_id"],)
            ).fetchone()[0]
            if n != 1:
                problems.append(f"debate message {ack['msg_id']} has {n} delivery rows")


def _frozen(conn: Any, frozen: Frozen, problems: list[str]) -> None:
    for card_id, document, body in conn.execute(
        "SELECT card_id, document, body FROM chamber_cards"
    ):
        frozen.compare("card", card_id, (document, body), problems)
    for row in conn.execute("SELECT msg_id, * FROM debate_messages"):
        frozen.compare("debate message", row[0], tuple(row), problems)


def _check(conn: Any, acks: list[dict[str, Any]], frozen: Frozen, problems: list[str]) -> None:
    _acked(conn, acks, problems)
    _addressed(conn, acks, problems)
    _whole(conn, problems)
    _frozen(conn, frozen, problems)


def check_database(db: Path, acks: list[dict[str, Any]], frozen: Frozen) -> list[str]:
    """Every broken promise of ``db`` (after a kill), as sentences; empty when all hold."""
    conn = sqlite3.connect(db)
    try:
        problems: list[str] = []
        status = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if status != "ok":
            problems.append(f"integrity_check: {status}")
        _check(conn, acks, frozen, problems)
        return problems
    finally:
        conn.close()


class _Pg:
    """A psycopg connection that takes the checker's ``?`` placeholders."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self.conn.execute(sql.replace("?", "%s"), params)


def check_pg(url: str, acks: list[dict[str, Any]], frozen: Frozen) -> list[str]:
    """`check_database` for a PostgreSQL database shared by several nodes (``url``), read in
    one repeatable-read snapshot so rows written meanwhile by a surviving node agree."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        problems: list[str] = []
        _check(_Pg(conn), acks, frozen, problems)
        return problems
