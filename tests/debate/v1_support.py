"""Helpers for the debate/v1 tests: a seated v1 topic and structured posts.

Seats: CONDUCTOR (cora, conductor scope), the blind roles PRO (alice) and CON (bob), JUDGE
(carol) and HUMAN (mallory), each holding its own session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from debate_support import ALICE, BOB, CAROL, CONDUCTOR, MALLORY

if TYPE_CHECKING:
    from debate_support import Desk

    from agora.identity import Principal

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


async def v1_topic(desk: Desk, **args: Any) -> V1:
    """An ACTIVE debate/v1 topic with every seat bound to its own session."""
    sessions = {role: await desk.session(who) for role, who in SEATS.items()}
    roles: dict[str, Any] = {
        role: sessions[role] if who is CONDUCTOR else (who, sessions[role])
        for role, who in SEATS.items()
    }
    args.setdefault("protocol_version", "debate/v1")
    args.setdefault("blind_roles_csv", "PRO,CON")
    topic = await desk.topic(CONDUCTOR, roles, **args)
    return V1(desk, topic, sessions)
