"""Order-swap judging, pure: the AB/BA projections and what two verdicts mean.

A projection shows the judge the two opposing positions in one order (AB: left first, BA:
right first). Its id is derived from (topic, round, order), so preparing the same pair twice
names the same projections. Both verdicts agreeing (same winner, same decision) stops the
debate; a split is STALEMATE ``judge_order_swap_disagreement``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.debate.rules import PROTOCOL_V1, loads, reject

if TYPE_CHECKING:
    from collections.abc import Iterable

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
            raise reject(
                "invalid_verdict", f"verdict.{name} must be a non-empty string{_HINTS[name]}"
            )
        out[name] = field.strip()
    return out


#: What each verdict field holds, said when it is missing or empty.
_HINTS: Final = {
    "winner_msg_id": (
        ": the msg_id of the winning position, one of the projection's two (its positions in"
        " debate_judge_prepare's reply and in debate_protocol_state's projections); a role"
        ' name (such as "winner": "PRO") is not accepted'
    ),
    "decision": ': the short decision, e.g. "PRO wins", the same in both orders\' verdicts',
}


def agree(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Whether the AB and BA verdicts name the same winner with the same decision."""
    return (first["winner_msg_id"], first["decision"]) == (
        second["winner_msg_id"],
        second["decision"],
    )


def judging_view(
    projections: Iterable[Projection], closed_early: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What debate_protocol_state shows of the judging: ``projections`` and ``outcome``.

    Every projection is listed with its id, order and positions, so the judge finds them
    without the conductor relaying debate_judge_prepare's reply, and with its judge role.
    A verdict shows only once both orders of its round are judged: the judge of one order
    never reads its other verdict back. ``outcome`` is the agreed verdict of a complete
    pair (what stopped the debate), with the winning role, or else the early close that
    stopped it (``closed_early``: `early_outcome`); None until there is one.
    """
    rounds: dict[int, list[Projection]] = {}
    for p in sorted(projections, key=lambda p: (p.round_no, p.order_key)):
        rounds.setdefault(p.round_no, []).append(p)
    listed: list[dict[str, Any]] = []
    outcome: dict[str, Any] | None = None
    for pair in rounds.values():
        verdicts = [p.verdict for p in pair if p.verdict is not None]
        complete = len(pair) == len(ORDERS) and len(verdicts) == len(ORDERS)
        listed.extend(
            {
                **p.public(),
                "judge_role": p.judge_role,
                "judged": p.verdict is not None,
                "verdict": p.verdict if complete else None,
                "decided_at": p.decided_at,
            }
            for p in pair
        )
        if complete and agree(verdicts[0], verdicts[1]):
            outcome = _outcome(pair, verdicts[0])
    if outcome is None and closed_early is not None:
        outcome = early_outcome(closed_early)
    return {"projections": listed, "outcome": outcome}


def early_outcome(closed: dict[str, Any]) -> dict[str, Any]:
    """The outcome of a debate a role outside the blind pair closed before any verdict
    pair agreed, in the shape of a judged one: no winner (``winner_role`` null),
    ``winner_msg_id`` the STATE message that closed it, ``judge_role`` the role that closed
    it, and ``decision`` saying so, with the reason it gave."""
    why = f": {closed['reason']}" if closed["reason"] else " (no reason given)"
    return {
        "round_no": closed["round_no"],
        "winner_msg_id": closed["msg_id"],
        "winner_role": None,
        "decision": f"closed early by {closed['role']}, before the judges agreed{why}",
        "judge_role": closed["role"],
        "decided_at": closed["at"],
        "closed_early": True,
    }


def _outcome(pair: list[Projection], verdict: dict[str, Any]) -> dict[str, Any]:
    """The agreed verdict of a judged pair, with the role that holds the winning position."""
    winner = verdict["winner_msg_id"]
    roles = [pos["role"] for pos in pair[0].positions if pos["msg_id"] == winner]
    return {
        "round_no": pair[0].round_no,
        "winner_msg_id": winner,
        "winner_role": roles[0] if roles else None,
        "decision": verdict["decision"],
        "judge_role": pair[0].judge_role,
        "decided_at": max(p.decided_at or "" for p in pair),
        "closed_early": False,
    }
