"""The data a topic is made of: its row, bindings, message index, cursors and claims.

Plain mutable records, owned by the topic entity and rebuilt from the store by `sql`. A
message's body is not kept here (only what validation and delivery need), so a topic with a
long transcript stays small in memory; bodies are read from committed rows when a reply
needs them. This module holds no rules and does no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from agora.toolsets.debate.protocol.state import ProtocolState
    from agora.toolsets.debate.sql.workers import WorkerClaim


@dataclass(slots=True)
class TopicRow:
    """The ``debate_topics`` row."""

    topic_id: str
    title: str
    project: str | None
    state: str
    created_at: str
    created_by_role: str
    resolve_by: str | None
    archived_at: str | None
    metadata: dict[str, Any]
    roles: list[str]
    protocol: dict[str, Any]
    shape: str
    updated_at: str


@dataclass(slots=True)
class Binding:
    """One (topic, role) binding generation; retired ones stay as history."""

    topic_id: str
    role: str
    generation: int
    session_id: str
    owner: str
    runtime: str | None
    state: str
    reason: str | None
    bound_by_msg_id: str | None
    bound_by_role: str | None
    created_at: str
    updated_at: str
    #: "lifecycle" when retired by RESOLVED/ARCHIVED: it still lets its owner read the
    #: transcript and finish the lifecycle, nothing else.
    retired_by: str | None = None
    #: The conductor override (a CONDUCTOR DECISION's msg_id) that installed this binding:
    #: its posts are the conductor's, which readers are told (`replies.message`).
    override_msg_id: str | None = None


class MsgMeta(msgspec.Struct, frozen=True, gc=False):
    """What the topic keeps of one message (immutable).

    A live topic keeps one per message for as long as it stays in memory (a busy one
    hundreds of thousands), and every post makes one: a Struct is made positionally in C
    (a frozen dataclass set each field through ``object.__setattr__``, several times the
    cost) and, holding only strings, a tuple of strings and flags, is never tracked by the
    cyclic collector (``gc=False``: no scan of each new message, no header per message).
    """

    msg_id: str
    ts: str
    role: str
    kind: str
    priority: str
    reply_to: str | None
    #: Recipient keys (``role:R`` / ``session:S``); empty for a broadcast.
    recipients: tuple[str, ...]
    standing: bool | None
    deferred: bool

    @property
    def cursor(self) -> tuple[str, str]:
        """The message's compound (ts, msg_id) position."""
        return (self.ts, self.msg_id)


@dataclass(slots=True)
class Cursor:
    """A (topic, role, session) signal cursor."""

    ts: str | None = None
    msg_id: str | None = None
    last_check_at: str | None = None
    superseded: bool = False

    @property
    def position(self) -> tuple[str, str]:
        """The compound position (the start of the topic when unset or superseded)."""
        if self.ts is None or self.msg_id is None or self.superseded:
            return ("", "")
        return (self.ts, self.msg_id)


@dataclass(slots=True)
class Claim:
    """A one-shot DECISION claim, taken by the first check that returned the message."""

    msg_id: str
    role: str
    session_id: str
    owner: str
    state: str
    claimed_at: str
    updated_at: str


@dataclass(slots=True)
class TopicData:
    """Everything the topic entity holds besides its row."""

    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    messages: dict[str, MsgMeta] = field(default_factory=dict)
    inbox: dict[str, list[MsgMeta]] = field(default_factory=dict)
    #: Delivery markers not yet done, per recipient key, in (ts, msg_id) order:
    #: msg_id -> pending | delivered.
    deliveries: dict[str, dict[str, str]] = field(default_factory=dict)
    cursors: dict[tuple[str, str], Cursor] = field(default_factory=dict)
    watermarks: dict[str, tuple[str, str]] = field(default_factory=dict)
    claims: dict[str, Claim] = field(default_factory=dict)
    open_questions: dict[str, MsgMeta] = field(default_factory=dict)
    #: Rendered addressed messages while a delivery of theirs is open (the inbox replies
    #: come from here without a read; consumed ones are read back from the store).
    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_ts: str = ""
    last_msg_id: str | None = None
    history_seq: int = 0
    #: The debate/v1 micro-state (None on legacy topics).
    protocol: ProtocolState | None = None
    #: Worker claims by (role, parent session, trigger).
    workers: dict[tuple[str, str, str], WorkerClaim] = field(default_factory=dict)
    #: The one tuple of each distinct recipient set the messages share (`topic.compact`).
    recipient_sets: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    #: The messages as loaded from the store, in order; never one this copy's commands add
    #: (they may not commit). A reload reads only the messages after them (`TopicKind`).
    committed: list[MsgMeta] = field(default_factory=list)
