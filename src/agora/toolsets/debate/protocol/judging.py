"""Order-swap judging, pure: the AB/BA projections and what two verdicts mean.

A projection shows the judge the two opposing positions in one order (AB: left first, BA:
right first). Its id is derived from (topic, round, order), so preparing the same pair twice
names the same projections. Both verdicts agreeing (same winner, same decision) stops the
debate; a split is STALEMATE ``judge_order_swap_disagreement``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Final

from agora.toolsets.debate.rules import PROTOCOL_V1, loads, reject

ORDERS: Final = ("AB", "BA")
POSITION_KINDS: Final = frozenset({"CLAIM", "REBUT"})
SPLIT_REASON: Final = "judge_order_swap_disagreement"


@dataclass(slots=True)
class Projection:
    """One immutable projection and, once given, its immutable verdict."""

    projection_id: str
    topic_id: str
    round_no: int
    order_key: str
    left_msg_id: str
    right_msg_id: str
    positions: list[dict[str, Any]]
    created_at: str
    verdict: dict[str, Any] | None = None
    judge_role: str | None = None
    decided_at: str | None = None

    def public(self) -> dict[str, Any]:
        """The projection as debate_judge_prepare returns it."""
        return {
            "projection_id": self.projection_id,
            "order_key": self.order_key,
            "protocol_version": PROTOCOL_V1,
            "topic_id": self.topic_id,
            "round_no": self.round_no,
            "positions": self.positions,
        }


def projection_id(topic_id: str, round_no: int, order_key: str) -> str:
    """The stable id of a topic round's projection in one order."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"debate:{topic_id}:{round_no}:{order_key}"))


def position(msg_id: str, role: str, kind: str, payload: dict[str, Any] | None) -> dict[str, Any]:
    """The normalized view of one position (its payload's summary and evidence)."""
    payload = payload or {}
    return {
        "msg_id": msg_id,
        "role": role,
        "kind": kind,
        "summary": payload.get("summary"),
        "evidence_refs": payload.get("evidence_refs", []),
    }


def parse_verdict(text: str) -> dict[str, str]:
    """``{winner_msg_id, decision}`` from verdict_json (a stringified JSON string is parsed
    once more, as the reference client sends it).

    Raises:
        DebateError: ``invalid_verdict``.
    """
    value: Any = loads(text, "verdict_json", "invalid_verdict")
    if isinstance(value, str):
        value = loads(value, "verdict_json", "invalid_verdict")
    if not isinstance(value, dict):
        raise reject("invalid_verdict", "verdict_json is an object {winner_msg_id, decision}")
    out: dict[str, str] = {}
    for name in ("winner_msg_id", "decision"):
        field = value.get(name)
        if not isinstance(field, str) or not field.strip():
            raise reject("invalid_verdict", f"verdict.{name} must be a non-empty string")
        out[name] = field.strip()
    return out


def agree(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Whether the AB and BA verdicts name the same winner with the same decision."""
    return (first["winner_msg_id"], first["decision"]) == (
        second["winner_msg_id"],
        second["decision"],
    )
