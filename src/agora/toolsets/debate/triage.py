"""The work queue's ordering: a deterministic score and reason codes per open topic.

Explicit conductor lanes outrank everything derived: each lane step is worth more than all
derived signals together. Without a lane the score degrades through deadline urgency, open
questions (H ones count extra), active claims, missing role owners and the highest priority
still being delivered; ties go to the topic id. Pure: plain values in, plain values out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.debate.rules import PRIORITY_RANK, parse_iso

if TYPE_CHECKING:
    import datetime as dt

LANE_STEP: Final = 1000
ORDERING: Final = (
    "lane_rank",
    "deadline_urgency",
    "open_questions",
    "blocked_questions",
    "active_claims",
    "missing_roles",
    "message_priority",
    "topic_id",
)


@dataclass
class Signals:
    """What the queue knows about one topic."""

    lane: str | None = None
    rank: int | None = None
    resolve_by: str | None = None
    open_questions: int = 0
    blocked: int = 0
    claims: int = 0
    missing_roles: list[str] = field(default_factory=list)
    priorities: set[str] = field(default_factory=set)


def lane_of(metadata: dict[str, Any]) -> tuple[str | None, int | None]:
    """The topic's lane and rank from its metadata (None when it has none)."""
    lane = metadata.get("conductor_priority")
    if isinstance(lane, dict) and isinstance(lane.get("lane"), str):
        value = str(lane["lane"]).upper()
        if len(value) == 2 and value[0] == "P" and value[1] in "01234567":
            return value, int(value[1])
    return None, None


def score(s: Signals, now: dt.datetime) -> tuple[float, list[str]]:
    """The priority score and the reason codes behind it."""
    total, reasons = 0.0, []
    if s.rank is not None:
        total += (8 - s.rank) * LANE_STEP
        reasons.append(f"lane:{s.lane}")
    if s.resolve_by:
        left = (parse_iso(s.resolve_by) - now).total_seconds()
        if left < 0:
            total, reasons = total + 500, [*reasons, "deadline_overdue"]
        elif left < 86400:
            total, reasons = total + 300, [*reasons, "deadline_soon"]
    for count, weight, code, cap in (
        (s.open_questions, 20, "open_questions", 10),
        (s.blocked, 5, "blocked_questions", 10),
        (s.claims, 10, "active_claims", 10),
        (len(s.missing_roles), 10, "missing_roles", 10),
    ):
        if count:
            total += min(count, cap) * weight
            reasons.append(code)
    if s.priorities:
        top = max(s.priorities, key=lambda p: PRIORITY_RANK[p])
        total += 10 * PRIORITY_RANK[top]
        reasons.append(f"pending_{top}")
    return total, reasons
