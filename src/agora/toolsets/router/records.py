"""Evaluation records: immutable documents (evaluation runs, comparisons, exports), one actor each.

A record is written once; its idempotency ledger replays each key's result (``replayed`` is
not part of these results, so a replay is simply identical) and refuses a key reused for
another request. Records are visible only to the session that made them. Pure
``handle(command, now) -> Effects``; `RecordKind.load` reads the rows.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.runtime.entity import Effects
from agora.toolsets.router import replies, sql

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.store.neutral import ReadConn


class Replay(msgspec.Struct, frozen=True, tag=True):
    """The stored result of this key (None if the key is new), or the reuse refusal."""

    session_id: str
    idempotency_key: str
    request_digest: str


class Get(msgspec.Struct, frozen=True, tag=True):
    """The record's document, or None (also for another session's record)."""

    session_id: str


class Put(msgspec.Struct, frozen=True, tag=True):
    """Store the document if there is none yet, and this key's result."""

    session_id: str
    kind: str
    idempotency_key: str
    request_digest: str
    document: dict[str, Any]
    result: dict[str, Any]


class Record:
    """One record: its session, kind, document (None until put) and ledger."""

    def __init__(self, key: str, rows: dict[str, Any] | None) -> None:
        self.key = key
        self.session: str | None = None
        self.document: dict[str, Any] | None = None
        self.ledger: dict[str, tuple[str, dict[str, Any]]] = {}
        if rows is not None:
            self.session, _kind, document = rows["record"]
            self.document = json.loads(document)
            self.ledger = {k: (d, json.loads(r)) for k, d, r in rows["ledger"]}

    @property
    def vacant(self) -> bool:
        """Never put: the runtime keeps no actor for a lookup of the key."""
        return self.session is None and self.document is None and not self.ledger

    def _replay(self, session: str, key: str, request: str) -> Any:
        if self.session not in (None, session) or key not in self.ledger:
            return None
        stored_digest, result = self.ledger[key]
        if stored_digest != request:
            return replies.key_reused(key)
        return result

    def handle(self, command: Any, now: Now) -> Effects:
        """Apply a `Replay`, `Get` or `Put`."""
        if isinstance(command, Get):
            visible = self.session == command.session_id
            return Effects(reply=self.document if visible else None)
        replay = self._replay(command.session_id, command.idempotency_key, command.request_digest)
        if isinstance(command, Replay) or replay is not None:
            return Effects(reply=replay)
        if self.session not in (None, command.session_id):
            return Effects(reply=replies.refusal("record-conflict", "not available here"))
        at = sql.stamp(now.wall)
        writes = []
        if self.document is None:
            self.session, self.document = command.session_id, command.document
            writes.append(sql.insert_record(self.key, command.session_id, command.kind,
                                            json.dumps(command.document), at))  # fmt: skip
        self.ledger[command.idempotency_key] = (command.request_digest, command.result)
        writes.append(sql.insert_ledger(self.key, command.idempotency_key, command.request_digest,
                                        json.dumps(command.result), at))  # fmt: skip
        return Effects(reply=command.result, writes=writes, changed=True)


class RecordKind:
    """Loads evaluation records."""

    kind = "router-record"

    def load(self, conn: ReadConn, key: str, now: Now) -> Record:
        """The record ``key`` (an empty one if it does not exist yet)."""
        return Record(key, sql.read_record(conn, key))


RECORDS: Final = RecordKind()
