"""Helpers for the debate tests: principals, and `Desk`, a tool driver on a real runtime.

`Desk.call` checks the arguments against the tool's inputSchema (as the server does), runs
the handler as a given principal and validates every structured result against the tool's
outputSchema; `Desk.refused` returns the error body of a call that must fail, after checking
it fits the tool's outputSchema as served (its reply or the contract's refusal). The
shorthands (`post`, `check`, `advance`, `bind`, `rotate`, `wait`) spell the calls the tests
make most; each takes ``refused=True`` for a call that must fail, and then returns its error
body. `legacy_topic` plants a topic whose project was never set; `crew` seats a topic of
alice, bob and carol for the worker and wake tests, `trigger` addresses it a question and
`claim` takes a trigger as a derived worker of EXECUTOR_1; `seeding_columns` lets today's code
seed a store of an older schema version.

debate/v1: `v1_topic` seats an ACTIVE v1 topic (`V1`): CONDUCTOR (cora, conductor scope), the
blind roles PRO (alice) and CON (bob), JUDGE (carol) and HUMAN (mallory), each on its own
session (`SEATS`); `V1.post` posts a structured `payload`, and `to_debate` / `to_adjudicate`
drive the topic to those phases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest

from agora.errors import ToolError
from agora.identity import Principal
from agora.mcp.contracts import load_contract
from agora.mcp.validation import compile_validator
from agora.toolsets.base import ToolCall
from agora.toolsets.debate import sql
from agora.toolsets.debate.model import Binding, TopicRow
from agora.toolsets.debate.replies import argument_rejection, with_refusal
from agora.toolsets.debate.rules import SENTINEL_PROJECT
from agora.toolsets.debate.tools import HANDLERS

if TYPE_CHECKING:
    from agora.runtime.clock import FakeWall
    from agora.runtime.registry import Runtime

CONTRACT = load_contract("debate")
INPUT = {n: compile_validator(dict(t.input_schema)) for n, t in CONTRACT.tools.items()}
OUTPUT = {
    n: jsonschema.Draft202012Validator(dict(t.output_schema))
    for n, t in CONTRACT.tools.items()
    if t.output_schema is not None
}
#: The outputSchemas as served (reply or refusal): every refusal body must fit them.
SERVED = {
    n: jsonschema.Draft202012Validator(
        with_refusal(t.to_mcp(), CONTRACT.data["refusal"])["outputSchema"]
    )
    for n, t in CONTRACT.tools.items()
    if t.output_schema is not None
}

ALICE = Principal("alice", projects=frozenset({"ops"}))
BOB = Principal("bob", projects=frozenset({"ops"}))
CAROL = Principal("carol", projects=frozenset({"ops"}))
MALLORY = Principal("mallory", projects=frozenset({"ops"}))
OUTSIDER = Principal("olga", projects=frozenset({"other"}))
CONDUCTOR = Principal("cora", scopes=frozenset({"conductor"}), projects=frozenset({"ops"}))
STAR = Principal("stella", scopes=frozenset({"star"}))
LANE = '{"priority_lane": "P2", "priority_reason": "test topic"}'


@dataclass
class Desk:
    """Calls debate tools as any principal against one runtime."""

    runtime: Runtime
    wall: FakeWall
    calls: list[str] = field(default_factory=list)

    async def call(self, who: Principal, tool: str, **args: Any) -> dict[str, Any]:
        """Call ``tool``; its result must match the tool's outputSchema."""
        issues = INPUT[tool].errors(args)
        if issues:
            raise ToolError(argument_rejection(issues))
        self.calls.append(tool)
        call = ToolCall(tool=tool, args=args, principal=who, runtime=self.runtime)
        result = await HANDLERS[tool](call)
        OUTPUT[tool].validate(result)
        return result

    async def refused(self, who: Principal, tool: str, **args: Any) -> dict[str, Any]:
        """Call ``tool``, which must fail; return its structured error body."""
        with pytest.raises(ToolError) as info:
            await self.call(who, tool, **args)
        body = info.value.body
        assert body["ok"] is False, body
        assert isinstance(body["error"], str), body
        SERVED[tool].validate(body)
        return body

    async def session(self, who: Principal) -> str:
        """A fresh session owned by ``who``."""
        return str((await self.call(who, "debate_session_open"))["session_id"])

    async def topic(
        self, who: Principal, roles: dict[str, Any], *, state: str = "ACTIVE", **args: Any
    ) -> str:
        """A topic created by ``who`` with ``roles``: role -> a session of ``who``,
        (principal, session) for a participant who binds the role after creation, or None
        for a role left unbound."""
        entries = [
            {"role": r, "session_id": s if isinstance(s, str) else None} for r, s in roles.items()
        ]
        first = next(iter(roles))
        args.setdefault("metadata_json", LANE)
        out = await self.call(
            who,
            "debate_init",
            title="a topic",
            created_by_role=first,
            roles_json=json.dumps(entries),
            **args,
        )
        topic_id = str(out["topic_id"])
        for role, held in roles.items():
            if isinstance(held, tuple):
                owner, session = held
                await self.call(
                    owner, "debate_bind_role", topic_id=topic_id, role=role, session_id=session
                )
        if state != "INIT":
            await self.call(who, "debate_state", topic_id=topic_id, role=first, new_state="ACTIVE")
        return topic_id

    async def _use(
        self, who: Principal, tool: str, *, refused: bool = False, **args: Any
    ) -> dict[str, Any]:
        """``call``, or ``refused`` when the call must fail."""
        return await (self.refused if refused else self.call)(who, tool, **args)

    async def post(
        self,
        who: Principal,
        topic: str,
        role: str,
        body: str = "x",
        *,
        to: str | None = None,
        priority: str = "M",
        kind: str = "STATUS",
        **args: Any,
    ) -> dict[str, Any]:
        """debate_post as ``who`` in ``role``; with ``to``, debate_post_with_recipients
        addressed to ``to`` (its addressed_to_csv)."""
        tool = "debate_post"
        if to is not None:
            tool, args["addressed_to_csv"] = "debate_post_with_recipients", to
        return await self._use(
            who, tool, topic_id=topic, role=role, priority=priority, kind=kind, body=body, **args
        )

    async def check(
        self, who: Principal, topic: str, role: str, session: str, **args: Any
    ) -> dict[str, Any]:
        """debate_signal_check of ``role`` through ``session``."""
        return await self._use(
            who, "debate_signal_check", topic_id=topic, role=role, session_id=session, **args
        )

    async def advance(
        self, who: Principal, topic: str, role: str, session: str, msg_id: str, **args: Any
    ) -> dict[str, Any]:
        """debate_signal_advance of ``role`` through ``session`` up to ``msg_id``."""
        args.update(topic_id=topic, role=role, session_id=session, last_processed_msg_id=msg_id)
        return await self._use(who, "debate_signal_advance", **args)

    async def bind(
        self, who: Principal, topic: str, role: str, session: str, **args: Any
    ) -> dict[str, Any]:
        """debate_bind_role of ``role`` to ``session``."""
        args.update(topic_id=topic, role=role, session_id=session)
        return await self._use(who, "debate_bind_role", **args)

    async def rotate(
        self, who: Principal, topic: str, role: str, old: str, new: str, **args: Any
    ) -> dict[str, Any]:
        """debate_rotate_session of ``role`` from session ``old`` to ``new``."""
        args.update(topic_id=topic, role=role, old_session_id=old, new_session_id=new)
        return await self._use(who, "debate_rotate_session", **args)

    async def wait(
        self,
        who: Principal,
        topic: str | None,
        role: str,
        session: str,
        timeout_ms: int,
        **args: Any,
    ) -> dict[str, Any]:
        """debate_signal_wait of ``role`` through ``session``; ``topic`` None waits on every
        topic the session holds a role in."""
        if topic is not None:
            args["topic_id"] = topic
        args.update(role=role, session_id=session, timeout_ms=timeout_ms)
        return await self._use(who, "debate_signal_wait", **args)


#: The columns later migrations added that today's code names (migration 6: conductor
#: overrides; migration 7: a debate closed early). A test seeding a store of an older version
#: with today's code adds them for the seeding and drops them again (`seeding_columns`), so
#: the upgrade it tests still starts from that version's tables.
NEWER_COLUMNS = (
    ("debate_messages", "override_msg_id"),
    ("debate_bindings", "override_msg_id"),
    ("debate_protocol", "closed_early"),
)


async def seeding_columns(runtime: Runtime, *, add: bool) -> None:
    """Add (``add``) or drop `NEWER_COLUMNS` in an older store."""
    verb = "ADD COLUMN {} TEXT" if add else "DROP COLUMN {}"
    await runtime.write(
        [(f"ALTER TABLE {table} {verb.format(column)}", ()) for table, column in NEWER_COLUMNS]
    )


async def legacy_topic(desk: Desk, topic_id: str, session: str, title: str = "legacy") -> str:
    """Plant an ACTIVE topic as an older store holds it: project never set (the sentinel),
    CONDUCTOR bound to ``session`` for alice."""
    at = "2026-01-01T00:00:00.000000Z"
    row = TopicRow(
        topic_id,
        title,
        SENTINEL_PROJECT,
        "ACTIVE",
        at,
        "CONDUCTOR",
        None,
        None,
        {},
        ["CONDUCTOR"],
        {},
        "{}",
        at,
    )
    binding = Binding(
        topic_id, "CONDUCTOR", 1, session, "alice", None, "active", None, None, None, at, at
    )
    await desk.runtime.write([sql.insert_topic(row), sql.upsert_binding(binding)])
    return topic_id


async def crew(desk: Desk, **more: Any) -> dict[str, str]:
    """An ACTIVE topic of alice: CONDUCTOR (alice), EXECUTOR_1 (bob) and REVIEWER (carol), each
    on a session of its own, plus ``more`` roles as `Desk.topic` takes them. Returns the topic
    id ("topic") and the sessions of EXECUTOR_1 ("exec") and REVIEWER ("rev")."""
    a, b, c = await desk.session(ALICE), await desk.session(BOB), await desk.session(CAROL)
    roles = {"CONDUCTOR": a, "EXECUTOR_1": (BOB, b), "REVIEWER": (CAROL, c), **more}
    return {"topic": await desk.topic(ALICE, roles), "exec": b, "rev": c}


async def trigger(
    desk: Desk,
    room: dict[str, str],
    to: str = "EXECUTOR_1",
    *,
    vehicle: str = "analysis",
    kind: str = "Q",
) -> str:
    """The msg_id of a post by alice's CONDUCTOR on a `crew` topic addressed to ``to``."""
    out = await desk.post(
        ALICE, room["topic"], "CONDUCTOR", "please look", to=to, kind=kind, vehicle=vehicle
    )
    return str(out["msg_id"])


async def claim(
    desk: Desk,
    room: dict[str, str],
    msg_id: str,
    who: Principal = BOB,
    session: str | None = None,
    *,
    refused: bool = False,
    **args: Any,
) -> dict[str, Any]:
    """debate_worker_claim of EXECUTOR_1 on a `crew` topic (its parent session by default);
    with ``refused`` the claim must fail, and its error body is returned."""
    use = desk.refused if refused else desk.call
    return await use(
        who,
        "debate_worker_claim",
        topic_id=room["topic"],
        role="EXECUTOR_1",
        parent_session_id=session or room["exec"],
        trigger_msg_id=msg_id,
        **args,
    )


SEATS = {"CONDUCTOR": CONDUCTOR, "PRO": ALICE, "CON": BOB, "JUDGE": CAROL, "HUMAN": MALLORY}


def payload(summary: str = "a position", **extra: Any) -> str:
    """A structured debate/v1 payload."""
    return json.dumps({"summary": summary, "assumptions": [], "evidence_refs": [], **extra})


@dataclass
class V1:
    """A seated debate/v1 topic."""

    desk: Desk
    topic: str
    sessions: dict[str, str]

    async def post(
        self, role: str, kind: str, *, priority: str = "M", to: str | None = None, **args: Any
    ) -> dict[str, Any]:
        """Post as ``role`` (its seat's principal) with a structured payload."""
        args.setdefault("payload_json", payload(f"{role} {kind}"))
        args.setdefault("body", f"{role} says {kind}")
        tool = "debate_post" if to is None else "debate_post_with_recipients"
        if to is not None:
            args["addressed_to_csv"] = to
        return await self.desk.call(
            SEATS[role],
            tool,
            topic_id=self.topic,
            role=role,
            priority=priority,
            kind=kind,
            **args,
        )

    async def refused(self, role: str, kind: str, **args: Any) -> dict[str, Any]:
        """A post as ``role`` that must be refused; its error body."""
        args.setdefault("payload_json", payload())
        return await self.desk.refused(
            SEATS[role],
            "debate_post",
            topic_id=self.topic,
            role=role,
            priority="M",
            kind=kind,
            body="x",
            **args,
        )

    async def state(self, who: Principal = CONDUCTOR) -> dict[str, Any]:
        """debate_protocol_state as ``who``."""
        return await self.desk.call(who, "debate_protocol_state", topic_id=self.topic)

    async def to_debate(self) -> tuple[str, str]:
        """Commit both blind claims; return their msg_ids (PRO, CON)."""
        pro = await self.post("PRO", "CLAIM")
        con = await self.post("CON", "CLAIM")
        return pro["msg_id"], con["msg_id"]

    async def to_adjudicate(self) -> tuple[str, str]:
        """Blind claims, then a verified VERIFY by JUDGE: ADJUDICATE."""
        pro, con = await self.to_debate()
        await self.post(
            "JUDGE", "VERIFY", reply_to=pro, payload_json=payload("checked", result="verified")
        )
        return pro, con


async def v1_topic(desk: Desk, *, without: tuple[str, ...] = (), **args: Any) -> V1:
    """An ACTIVE debate/v1 topic with every seat bound to its own session (but the roles in
    ``without``, which the topic does not declare)."""
    seats = {role: who for role, who in SEATS.items() if role not in without}
    sessions = {role: await desk.session(who) for role, who in seats.items()}
    roles: dict[str, Any] = {
        role: sessions[role] if who is CONDUCTOR else (who, sessions[role])
        for role, who in seats.items()
    }
    args.setdefault("protocol_version", "debate/v1")
    args.setdefault("blind_roles_csv", "PRO,CON")
    topic = await desk.topic(CONDUCTOR, roles, **args)
    return V1(desk, topic, sessions)
