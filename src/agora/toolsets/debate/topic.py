"""The debate topic entity: one actor per topic, pure ``handle(command, now) -> Effects``.

`Topic` holds the topic row and its records (`model.TopicData`) and dispatches each command
through the one `CommandTable` in `agora.toolsets.debate.commands`; the command modules hold the
behaviour, this module the shared moves they compose (gates, appending a message, history
events, cursors). A command validates everything before it changes anything; a rejection is
returned as the reply (a `DebateError`) with no writes. `TopicKind` rebuilds a topic from
committed rows. No I/O besides `load`, no trio, no awaits.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Final

from agora.runtime.entity import Effects
from agora.toolsets.debate import access, sql
from agora.toolsets.debate.model import Cursor, MsgMeta, TopicData, TopicRow
from agora.toolsets.debate.replies import message, rendered
from agora.toolsets.debate.rules import (
    START,
    DebateError,
    inbox_uri,
    next_stamp,
    reject,
    stamp,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.runtime.clock import Now
    from agora.runtime.commands import CommandTable
    from agora.runtime.entity import Write
    from agora.store.neutral import ReadConn
    from agora.toolsets.debate.access import Caller
    from agora.toolsets.debate.model import Binding
    from agora.toolsets.debate.sql.workers import WorkerClaim

KIND_NAME: Final = "debate_topic"


class Topic:
    """One debate topic and everything it owns."""

    def __init__(
        self, topic_id: str, row: TopicRow | None = None, data: TopicData | None = None
    ) -> None:
        self.topic_id = topic_id
        self.row = row
        self.data = data or TopicData()

    @property
    def vacant(self) -> bool:
        """No topic by this id (yet): the runtime keeps no actor for a lookup of one."""
        return self.row is None

    def handle(self, command: object, now: Now) -> Effects:
        """Apply one command of `agora.toolsets.debate.commands`.

        Returns:
            Effects whose reply is the command's result, or the `DebateError` that
            rejected it (then with no writes).
        """
        table = _COMMANDS if _COMMANDS is not None else _commands()  # no call once loaded
        try:
            return table.dispatch(self, command, now)
        except DebateError as err:
            return Effects(reply=err)

    # -- gates ---------------------------------------------------------------------------------

    def role_bindings(self, role: str) -> list[Binding]:
        """The role's bindings, oldest generation first."""
        return self.data.bindings.get(role, [])

    def all_bindings(self) -> list[Binding]:
        """Every binding of every role."""
        return [b for group in self.data.bindings.values() for b in group]

    def active(self, role: str) -> Binding | None:
        """The role's active binding, if any."""
        for b in reversed(self.data.bindings.get(role, ())):  # a loop: no generator per call
            if b.state == "active":
                return b
        return None

    def live_sessions(self) -> set[str]:
        """Sessions holding an active binding in this topic."""
        return {b.session_id for b in self.all_bindings() if b.state == "active"}

    def read_gate(self, caller: Caller) -> TopicRow:
        """The topic row if the caller may read it (else the uniform denial)."""
        return access.check_read(self.row, self.all_bindings(), caller)

    def write_gate(self, caller: Caller, role: str, *, closing: bool = False) -> Binding:
        """The caller's owned active binding on ``role`` (else the uniform denial)."""
        return access.owned_binding(
            self.row, self.data.bindings.get(role, ()), role, caller, closing=closing
        )

    def session_gate(self, caller: Caller, role: str, session_id: str) -> Binding:
        """The caller's active binding of ``role`` held by ``session_id``, or by the parent of
        the active worker claim whose UUID session ``session_id`` is (signal paths)."""
        try:
            binding = self.write_gate(caller, role)
        except DebateError:
            self._check_closed_for(caller, role, session_id)
            raise
        if binding.session_id != session_id and self.worker_of(role, session_id, binding) is None:
            raise access.denied()
        return binding

    def _check_closed_for(self, caller: Caller, role: str, session_id: str) -> None:
        """Say why a participant whose binding closing the topic retired is refused, as a
        post does (``topic_resolved`` / ``topic_archived``), rather than the uniform denial
        meant for those who never held the binding."""
        row = self.row
        if row is None or row.state not in ("RESOLVED", "ARCHIVED"):
            return
        try:
            retired = self.write_gate(caller, role, closing=True)
        except DebateError:
            return
        if retired.session_id == session_id:
            ended = "" if self.data.protocol is None else ", debate_protocol_state its outcome"
            raise reject(
                f"topic_{row.state.lower()}",
                f"the topic is {row.state}: closing it retired its bindings, so nothing more"
                f" is delivered to them (debate_read shows the topic as it ended{ended})",
            )

    def worker_of(self, role: str, session_id: str, parent: Binding) -> WorkerClaim | None:
        """The active worker claim whose session ``session_id`` acts for ``parent``."""
        for claim in self.data.workers.values():
            if (
                claim.worker_session_id == session_id
                and claim.role == role
                and claim.state == "active"
                and claim.parent_session_id == parent.session_id
            ):
                return claim
        return None

    def require_row(self) -> TopicRow:
        """The row of an existing topic (else the uniform denial)."""
        if self.row is None:
            raise access.denied()
        return self.row

    # -- shared moves --------------------------------------------------------------------------

    def next_ts(self, now: Now) -> str:
        """The authoritative ts of the next message (strictly increasing per topic)."""
        return next_stamp(now.wall, self.data.last_ts)

    def event(self, writes: list[Write], at: str, event: str, actor: str, **detail: Any) -> None:
        """Append one audit/history event to ``writes``."""
        self.data.history_seq += 1
        writes.append(
            sql.insert_history(self.topic_id, self.data.history_seq, at, event, actor, detail)
        )

    def touch(self, writes: list[Write], at: str, *, row_changed: bool = True) -> None:
        """Record that the topic changed at ``at`` (the whole row when ``row_changed``)."""
        row = self.require_row()
        row.updated_at = at
        writes.append(sql.update_topic(row) if row_changed else sql.touch_topic(row.topic_id, at))

    def append(
        self,
        writes: list[Write],
        meta: MsgMeta,
        body: str,
        *,
        author_session_id: str | None,
        vehicle: str,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Preserve one message and index it: transcript, inbox, delivery markers, Q/A."""
        data = self.data
        writes.append(
            sql.insert_message(self.topic_id, meta, body, author_session_id, vehicle, extra or {})
        )
        meta = index(data, meta)
        deliveries = data.deliveries
        for key in meta.recipients:
            marks = deliveries.get(key)  # not setdefault: no empty dict made per message
            if marks is None:
                marks = deliveries[key] = {}
            marks[meta.msg_id] = "pending"
            writes.append(sql.insert_delivery(self.topic_id, meta.msg_id, key))
        if meta.recipients:
            data.bodies[meta.msg_id] = rendered(
                self.topic_id, meta, body, author_session_id, vehicle, extra or {}
            )

    def consumed(self, msg_id: str) -> None:
        """Forget the rendered body of a message no recipient still has to consume."""
        data = self.data
        deliveries = data.deliveries
        for key in data.messages[msg_id].recipients:
            marks = deliveries.get(key)
            if marks is not None and msg_id in marks:
                return
        data.bodies.pop(msg_id, None)

    def processed(self, role: str, session_id: str, meta: MsgMeta) -> bool:
        """Whether the (role, session) receipts already passed ``meta``: its signal cursor or
        the role's watermark is at or past it (the trigger is consumed)."""
        cursor = self.data.cursors.get((role, session_id))
        position = cursor.position if cursor is not None else START
        return max(position, self.data.watermarks.get(role, START)) >= meta.cursor

    def set_cursor(self, writes: list[Write], role: str, session_id: str, cursor: Cursor) -> None:
        """Store the (role, session) signal cursor."""
        self.data.cursors[(role, session_id)] = cursor
        writes.append(sql.upsert_cursor(self.topic_id, role, session_id, cursor))

    def inbox_uris(self, keys: Iterable[str]) -> list[str]:
        """The inbox resources (one per session) that messages for ``keys`` land in."""
        sessions: set[str] = set()
        for key in keys:
            kind, _, name = key.partition(":")
            if kind == "session":
                sessions.add(name)
            elif (holder := self.active(name)) is not None:
                sessions.add(holder.session_id)
        uris = [inbox_uri(s) for s in sessions]  # not sorted(genexpr): one step per item
        uris.sort()
        return uris

    def recipient_roles(self, keys: Iterable[str]) -> set[str]:
        """The roles whose inboxes messages for ``keys`` land in (a session's: the roles it
        holds actively here); waits are keyed by role (`Effects.wakes`)."""
        roles: set[str] = set()
        for key in keys:
            kind, _, name = key.partition(":")
            if kind == "role":
                roles.add(name)
            else:
                roles.update(b.role for b in self.all_bindings() if b.session_id == name)
        return roles

    def tip(self) -> tuple[str, str]:
        """The position of the newest message (the start when there is none)."""
        if self.data.last_msg_id is None:
            return START
        return (self.data.last_ts, self.data.last_msg_id)

    def stamp_now(self, now: Now) -> str:
        """``now`` as stored text."""
        return stamp(now.wall)


def _commands() -> CommandTable[Effects]:
    """The command table (imported on first use: the command modules import this one)."""
    global _COMMANDS
    if _COMMANDS is None:
        from agora.toolsets.debate.commands import COMMANDS

        _COMMANDS = COMMANDS
    return _COMMANDS


_COMMANDS: CommandTable[Effects] | None = None


def index(data: TopicData, meta: MsgMeta, compacted: bool = False) -> MsgMeta:
    """Add one message, in (ts, msg_id) order, to the topic's in-memory indexes; return the
    copy they hold (`compact`, unless ``compacted``: already one of ``data``'s).

    A Q stays open until an A replies to it; a reply whose body starts with ``[DEFERRED:``
    counts as an answer whatever its kind.
    """
    if not compacted:
        meta = compact(data, meta)
    data.messages[meta.msg_id] = meta
    data.last_ts, data.last_msg_id = meta.ts, meta.msg_id
    inbox = data.inbox
    for key in meta.recipients:
        listed = inbox.get(key)  # not setdefault: no empty list made per message
        if listed is None:
            inbox[key] = [meta]
        else:
            listed.append(meta)
    if meta.kind == "Q":
        data.open_questions[meta.msg_id] = meta
    elif meta.reply_to in data.open_questions and (meta.kind == "A" or meta.deferred):
        del data.open_questions[meta.reply_to]
    return meta


def compact(data: TopicData, meta: MsgMeta) -> MsgMeta:
    """``meta`` with the fields messages repeat shared: role, kind and priority interned,
    the recipients tuple one per distinct set in the topic, reply_to the parent's own id.

    A live topic keeps every message's `MsgMeta` for as long as it stays in memory: a
    busy one holds hundreds of thousands. Each message's own copies of those strings were
    about 40% of its ~530 bytes (a soak's RSS grew by that much per message posted).
    """
    recipients = meta.recipients
    if recipients:
        shared = data.recipient_sets.get(recipients)
        if shared is None:
            shared = tuple(sys.intern(key) for key in recipients)
            data.recipient_sets[shared] = shared
        recipients = shared
    reply_to = meta.reply_to
    if reply_to is not None and (parent := data.messages.get(reply_to)) is not None:
        reply_to = parent.msg_id
    return MsgMeta(
        meta.msg_id,
        meta.ts,
        sys.intern(meta.role),
        sys.intern(meta.kind),
        sys.intern(meta.priority),
        reply_to,
        recipients,
        meta.standing,
        meta.deferred,
    )


class TopicKind:
    """The `EntityKind` of debate topics: rebuilds a topic from its committed rows.

    Messages are only ever added, in (ts, msg_id) order (each is stamped after the last), so
    a `reload` after another node's change keeps the messages the dropped copy loaded and
    reads only those that follow; the rest (bindings, deliveries, cursors, ...) is read
    anew (a topic of 20,000 messages: 10-35 ms, where a load took 140-500 ms).
    """

    kind: str = KIND_NAME

    def load(self, conn: ReadConn, key: str, now: Now) -> Topic:
        """Build topic ``key``; a missing topic is "not yet created".

        Raises:
            LookupError: if the stored roster or metadata is malformed.
        """
        return self._build(conn, key, None)

    def reload(self, conn: ReadConn, key: str, now: Now, previous: Topic) -> Topic:
        """`load`, reusing the messages ``previous`` loaded (`TopicData.committed`)."""
        return self._build(conn, key, previous.data if previous.row is not None else None)

    def _build(self, conn: ReadConn, key: str, previous: TopicData | None) -> Topic:
        try:
            row = sql.topic_row(conn, key)
        except ValueError as exc:
            raise LookupError(str(exc)) from exc
        if row is None:
            return Topic(key)
        data = TopicData()
        for b in sql.bindings(conn, key):
            data.bindings.setdefault(b.role, []).append(b)
        after = None
        if previous is not None and previous.committed:
            data.recipient_sets = dict(previous.recipient_sets)
            for meta in previous.committed:
                index(data, meta, compacted=True)
            data.committed = list(previous.committed)
            after = (data.last_ts, data.last_msg_id or "")
        for meta in sql.message_metas(conn, key, after):
            data.committed.append(index(data, meta))
        open_rows = sql.open_deliveries(conn, key)
        open_rows.sort(key=lambda r: data.messages[r[0]].cursor)
        for msg_id, recipient, state in open_rows:
            data.deliveries.setdefault(recipient, {})[msg_id] = state
        rows = sql.messages_by_id(conn, sorted({r[0] for r in open_rows}))
        data.bodies = {msg_id: message(row) for msg_id, row in rows.items()}
        data.cursors = sql.cursors(conn, key)
        data.watermarks = sql.watermarks(conn, key)
        data.claims = {c.msg_id: c for c in sql.claims(conn, key)}
        data.history_seq = sql.history_seq(conn, key)
        data.protocol = sql.protocol_state(conn, key)
        data.workers = {c.key: c for c in sql.worker_claims(conn, key)}
        return Topic(key, row, data)


#: The one kind instance shared by every handler.
KIND: Final = TopicKind()
