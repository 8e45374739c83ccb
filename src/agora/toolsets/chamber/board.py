"""The public board: products ranked per suite over a date range, from server-seeded cards only.

Only cards whose signed body says the server drew the seed count: a chosen seed can be replayed,
so practice cards never rank; nor does a card whose figures contradict each other
(`listings.board_cards` leaves it out: it is evidence of nothing, and no key signs it). Each row is
one product in one suite: attempts (every sealed card: solved, failed, expired or quarantined),
successes, success rate, the median actions of solved attempts, and the median hints and wrong
submissions per attempt (always floats, ``2.0`` as well as ``2.5``; the median actions is
``None`` in a row with no solved attempt). Rows rank by success rate, then fewer median actions
of solved attempts (a row with none last), then more attempts, then product id. Only solved
cards count towards the actions: counting failed and expired ones would reward sealing or
abandoning a bad run at once over playing it out. `rank` is pure: the rows come from
`listings.board_cards`, the pages from `board_web`.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

#: (suite_id, product, outcome, actions_used, hints_used, wrong_submissions) of one card.
CardRow = tuple[str, str, str, int, int, int]


@dataclass(frozen=True, slots=True)
class BoardRow:
    """One product's standing in one suite."""

    suite_id: str
    product: str
    attempts: int
    solved: int
    expired: int
    quarantined: int
    median_actions: float | None
    median_hints: float
    median_wrong: float
    hints_total: int
    wrong_total: int

    @property
    def success_rate(self) -> float:
        """Solved attempts over all attempts."""
        return self.solved / self.attempts if self.attempts else 0.0

    def as_json(self, rank: int, cards_url: str) -> dict[str, Any]:
        """The row as the JSON board shows it."""
        return {
            "rank": rank,
            "product": self.product,
            "attempts": self.attempts,
            "solved": self.solved,
            "success_rate": round(self.success_rate, 4),
            "expired": self.expired,
            "quarantined": self.quarantined,
            "median_actions": self.median_actions,
            "median_hints": self.median_hints,
            "median_wrong_submissions": self.median_wrong,
            "hints_used": self.hints_total,
            "wrong_submissions": self.wrong_total,
            "cards": cards_url,
        }


def _median(values: Iterable[int]) -> float:
    """The median as a float whatever the count: JSON readers get one number type
    (``statistics.median`` gives an int for an odd count, a float for an even one)."""
    return float(statistics.median(values))


def _order(row: BoardRow) -> tuple[float, float, int, str]:
    """The ranking key: success rate, then fewer median actions of solved attempts (none
    ranks last), then more attempts, then product id."""
    actions = math.inf if row.median_actions is None else row.median_actions
    return (-row.success_rate, actions, -row.attempts, row.product)


def rank(rows: Iterable[CardRow]) -> dict[str, list[BoardRow]]:
    """Suite id -> its products, best first.

    Args:
        rows: One tuple per server-seeded card in the range.

    Returns:
        The ranked rows of each suite that has any.
    """
    grouped: dict[tuple[str, str], list[CardRow]] = defaultdict(list)
    for row in rows:
        grouped[(row[0], row[1] or "unknown")].append(row)
    board: dict[str, list[BoardRow]] = defaultdict(list)
    for (suite_id, product), cards in grouped.items():
        outcomes = [c[2] for c in cards]
        solved_actions = [c[3] for c in cards if c[2] == "solved"]
        board[suite_id].append(
            BoardRow(
                suite_id=suite_id,
                product=product,
                attempts=len(cards),
                solved=outcomes.count("solved"),
                expired=outcomes.count("expired"),
                quarantined=outcomes.count("quarantined"),
                median_actions=_median(solved_actions) if solved_actions else None,
                median_hints=_median(c[4] for c in cards),
                median_wrong=_median(c[5] for c in cards),
                hints_total=sum(c[4] for c in cards),
                wrong_total=sum(c[5] for c in cards),
            )
        )
    for rows_of_suite in board.values():
        rows_of_suite.sort(key=_order)
    return dict(sorted(board.items()))
