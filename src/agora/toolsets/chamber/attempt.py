"""One chamber attempt as a pure state machine: its counters, its state and one action step.

An attempt is created, becomes active with its first action, is terminal (unsealed) once the
room is solved or the action budget is spent, and ends sealed (or pending a signature, or
quarantined); past its TTL an unsealed attempt is expired. `Attempt.state` derives the
contract state from the counters and the wall clock; `step` applies one ``chamber_action``
and returns the new counters and the transcript record, or the `ToolError` to answer.
Transcript records are hash-chained by `transcript`. This module does no I/O and never
mutates the attempt: the entity applies a `Step` once its writes are built.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import rfc8785

from agora.toolsets.chamber import room as rooms
from agora.toolsets.chamber.consistency import sealed_state
from agora.toolsets.chamber.generate import build_room
from agora.toolsets.chamber.replies import failure
from agora.toolsets.chamber.transcript import genesis
from agora.toolsets.chamber.values import ValueFormatError, parse_value

if TYPE_CHECKING:
    from agora.errors import ToolError
    from agora.toolsets.chamber.commands import Act
    from agora.toolsets.chamber.contract import ChamberContract
    from agora.toolsets.chamber.room import Room

READ_OPS = ("look", "inspect", "hint")
OPEN_TOOLS = ("observe_chamber", "chamber_action", "call_for_help", "seal_attempt")


def iso(when: dt.datetime) -> str:
    """UTC time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    # Every reply prints its attempt's expiry and every action its second: memoize per
    # second, keyed by the POSIX second (cheaper to get and hash than a datetime).
    second = math.floor(when.timestamp())
    text = _ISO_SECONDS.get(second)
    if text is None:
        if len(_ISO_SECONDS) >= _ISO_CACHE:
            _ISO_SECONDS.clear()
        text = _ISO_SECONDS[second] = (
            f"{dt.datetime.fromtimestamp(second, dt.UTC):%Y-%m-%dT%H:%M:%SZ}"
        )
    return text


_ISO_CACHE = 4096
_ISO_SECONDS: dict[int, str] = {}


def seed_commitment(salt: str, suite_id: str, seed: str) -> str:
    """The salted hash of ``seed`` an attempt publishes (`Attempt.seed_commitment`)."""
    digest = hashlib.sha256(f"{salt}:{suite_id}:{seed}".encode())
    return "sha256:" + digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Rules:
    """What the contract fixes about every attempt."""

    toolset_id: str
    max_actions: int
    ttl: dt.timedelta
    retention: dt.timedelta
    action_ops: tuple[str, ...]
    schema_bundle_hash: str
    notice_hash: str | None

    @classmethod
    def from_contract(cls, contract: ChamberContract) -> Rules:
        """The rules of ``contract``."""
        limits = contract.limits
        return cls(
            toolset_id=contract.toolset_id,
            max_actions=limits.max_actions,
            ttl=dt.timedelta(seconds=limits.attempt_ttl_seconds),
            retention=dt.timedelta(seconds=limits.finished_session_retention_seconds),
            action_ops=contract.action_ops,
            schema_bundle_hash=contract.schema_bundle_hash,
            notice_hash=notice_hash(contract),
        )


@dataclass(slots=True)
class SealedCard:
    """The card an attempt was sealed with: its bytes never change once written."""

    card_id: str
    body: bytes
    sealed_at: dt.datetime
    outcome: str
    signature: dict[str, Any] | None = None


@dataclass(slots=True)
class Attempt:
    """The state of one attempt (loaded from, and written back to, the store)."""

    rules: Rules
    handle: str
    suite_id: str
    generation: str
    engine: str
    seed: str
    seed_salt: str
    identity: dict[str, str]
    assurance: str
    preflight: dict[str, bool] | None
    principal: str
    created_at: dt.datetime
    expires_at: dt.datetime
    via_alias: bool = False
    #: ``server`` (drawn by the server), ``participant`` (chosen by the caller), or
    #: ``unknown`` (entered before the server recorded it).
    seed_source: str = "server"
    action_index: int = 0
    opened: int = 0
    hints_used: int = 0
    hint_level: int = 0
    wrong: int = 0
    head: str = ""
    transcript: list[bytes] = field(default_factory=list)
    allies: list[tuple[str, str]] = field(default_factory=list)
    card: SealedCard | None = None
    quarantined: bool = False
    _room: Room | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.head:
            self.head = genesis(self.seed_commitment)

    @property
    def room(self) -> Room:
        """The attempt's room (deterministic from suite + seed, built once)."""
        if self._room is None:
            self._room = build_room(self.suite_id, self.engine, self.seed)
        return self._room

    @property
    def seed_commitment(self) -> str:
        """Salted hash of the seed: publishable, and provable later by revealing both."""
        return seed_commitment(self.seed_salt, self.suite_id, self.seed)

    @property
    def room_id(self) -> str:
        """Unsalted hash of suite + seed: the same for every replay of one chosen room."""
        digest = hashlib.sha256(f"scoreia-chamber-room\n{self.suite_id}\n{self.seed}".encode())
        return "sha256:" + digest.hexdigest()

    @property
    def solved(self) -> bool:
        """Whether every lock is open."""
        return self.opened >= len(self.room.locks)

    def state(self, now: dt.datetime) -> str:
        """The contract state at wall time ``now``."""
        if self.card is not None:
            c = self.card
            return sealed_state(c.outcome, c.body, c.signature is not None, self.quarantined)
        if now >= self.expires_at:
            return "expired"
        if self.solved or self.action_index >= self.rules.max_actions:
            return "terminal_unsealed"
        return "created" if self.action_index == 0 else "active"

    def allowed_ops(self, now: dt.datetime) -> list[str]:
        """Ops `chamber_action` accepts right now."""
        return self._ops_in(self.state(now))

    def _ops_in(self, state: str) -> list[str]:
        if state not in ("created", "active"):
            return []
        lock = self.room.current(self.opened)
        return [*READ_OPS, lock.op] if lock else list(READ_OPS)

    def envelope(self, now: dt.datetime) -> dict[str, Any]:
        """The attempt fields every successful reply carries."""
        state = self.state(now)  # once: every field below must agree on it
        terminal = state not in ("created", "active")
        return {
            "ok": True,
            "attempt_handle": self.handle,
            "attempt_state": state,
            "toolset_id": self.rules.toolset_id,
            "suite_id": self.suite_id,
            "action_index": self.action_index,
            "remaining_actions": max(0, self.rules.max_actions - self.action_index),
            "allowed_ops": self._ops_in(state),
            # Once a card exists (an expired one included) nothing is left but a new attempt.
            "allowed_next_tools": _tools_in(state if self.card is None else "sealed"),
            "terminal": terminal,
            "must_seal": terminal and self.card is None,
            "expires_at": iso(self.expires_at),
            "locks_open": self.opened,
            "locks_total": len(self.room.locks),
        }

    def refusal(self, now: dt.datetime) -> ToolError | None:
        """The error for any further play on a sealed or expired attempt, else None."""
        state = self.state(now)
        if self.card is not None:
            return failure(
                "attempt_already_sealed",
                closed_words(self.card.card_id, self.card.outcome, self.expires_at) + ".",
                "Call enter_open_challenge to start a new attempt.",
                attempt_handle=self.handle,
                attempt_state=state,
                card_id=self.card.card_id,
            )
        if state == "expired":
            return failure(
                "attempt_expired",
                f"The attempt expired at {iso(self.expires_at)}.",
                "Call seal_attempt to publish its card, then enter a new attempt.",
                attempt_handle=self.handle,
                attempt_state=state,
                must_seal=True,
            )
        return None


def closed_words(card_id: str, outcome: str, expires_at: dt.datetime | None) -> str:
    """What an attempt with card ``card_id`` says of itself: sealed, or (its ``outcome``
    ``expired``) expired unsealed and published by the sweep, which no agent sealed."""
    if outcome == "expired":
        when = f" at {iso(expires_at)}" if expires_at is not None else ""
        return (
            f"This attempt expired{when} unsealed; the expiry sweep published its card ({card_id})"
        )
    return f"This attempt is sealed ({card_id})"


def _tools_in(state: str) -> list[str]:
    if state in ("created", "active"):
        return list(OPEN_TOOLS)
    if state in ("terminal_unsealed", "expired"):
        return ["seal_attempt"]
    return ["enter_open_challenge"]


def notice_hash(contract: ChamberContract) -> str | None:
    """``sha256:`` of the canonical publication notice, or None if the contract has none."""
    notice = contract.publication_notice
    if notice is None:
        return None
    return "sha256:" + hashlib.sha256(rfc8785.dumps(dict(notice))).hexdigest()


@dataclass(frozen=True, slots=True)
class Step:
    """The outcome of one accepted action: new counters and its transcript record."""

    record: dict[str, Any]
    observation: str
    accepted: bool | None
    opened: int
    hint_level: int
    hints_used: int
    wrong: int


def _guard(attempt: Attempt, act: Act, now: dt.datetime) -> ToolError | None:
    refusal = attempt.refusal(now)
    if refusal is not None:
        return refusal
    state = attempt.state(now)
    if act.expected_action_index is not None and act.expected_action_index != attempt.action_index:
        return failure(
            "stale_action_index",
            f"expected_action_index {act.expected_action_index} is stale; the transcript has "
            f"{attempt.action_index} actions.",
            f"Re-read the room if needed, then retry with expected_action_index="
            f"{attempt.action_index}.",
            attempt_handle=attempt.handle,
            attempt_state=state,
            current_action_index=attempt.action_index,
        )
    if attempt.action_index >= attempt.rules.max_actions:
        return failure(
            "action_limit_reached",
            f"All {attempt.rules.max_actions} actions of this attempt are used.",
            "Call seal_attempt to publish the card.",
            attempt_handle=attempt.handle,
            attempt_state=state,
            must_seal=True,
            current_action_index=attempt.action_index,
        )
    allowed = attempt.allowed_ops(now)
    if act.op not in allowed:
        why = "The room is solved." if attempt.solved else f"{act.op} is not allowed now."
        hint = "Call seal_attempt." if attempt.solved else f"Use one of: {', '.join(allowed)}."
        return failure(
            "op_not_allowed",
            why,
            hint,
            attempt_handle=attempt.handle,
            attempt_state=state,
            allowed_ops=allowed,
        )
    return None


def step(attempt: Attempt, act: Act, now: dt.datetime) -> Step | ToolError:
    """Apply one ``chamber_action`` to ``attempt`` without changing it.

    Args:
        attempt: The attempt as it stands.
        act: The action.
        now: Wall time.

    Returns:
        The `Step` to apply, or the `ToolError` to answer (which changes nothing).
    """
    refused = _guard(attempt, act, now)
    if refused is not None:
        return refused
    room = attempt.room
    record: dict[str, Any] = {"i": attempt.action_index, "op": act.op, "at": iso(now)}
    opened, level, hints, wrong = (
        attempt.opened,
        attempt.hint_level,
        attempt.hints_used,
        attempt.wrong,
    )
    accepted: bool | None = None
    if act.op == "look":
        text = rooms.look(room, opened)
    elif act.op == "inspect":
        if act.object is None:
            return failure(
                "object_not_available",
                f"inspect needs `object`: one of {', '.join(room.object_ids)}.",
                "Call chamber_action again with op=inspect and one of those object ids.",
                attempt_handle=attempt.handle,
            )
        if room.object(act.object) is None:
            return failure(
                "object_not_available",
                f"There is no object {act.object!r} in this room.",
                f"Inspect one of: {', '.join(room.object_ids)}.",
                attempt_handle=attempt.handle,
            )
        record["object"] = act.object
        text = rooms.inspect(room, act.object, opened)
    elif act.op == "hint":
        level += 1
        if rooms.gives_hint(room, opened, level):  # "no further hints" is not a hint used
            hints += 1
        record["level"] = level
        text = rooms.hint(room, opened, level)
    else:
        lock = room.locks[opened]
        try:
            given = parse_value(lock.puzzle.fmt, act.value)
        except ValueFormatError as exc:
            return failure(
                "value_format_invalid",
                f"{act.op}: {exc}.",
                f"Send value as {lock.puzzle.fmt.describe()}.",
                attempt_handle=attempt.handle,
            )
        record["value"] = list(given)
        accepted = given == lock.puzzle.answer
        if accepted:
            opened += 1
            level = 0
            text = rooms.accepted(room, opened)
        else:
            wrong += 1
            text = rooms.NOT_ACCEPTED
        record["accepted"] = accepted
    return Step(record, text, accepted, opened, level, hints, wrong)


def observe(attempt: Attempt, object_id: str, now: dt.datetime) -> str | ToolError:
    """What ``observe_chamber`` shows for ``object_id`` (free), or the error to answer."""
    refusal = attempt.refusal(now)
    if refusal is not None:
        return refusal
    if attempt.room.object(object_id) is None:
        return failure(
            "object_not_available",
            f"There is no object {object_id!r} in this room.",
            f"Observe one of the objects returned at entry: {', '.join(attempt.room.object_ids)}.",
            attempt_handle=attempt.handle,
            attempt_state=attempt.state(now),
        )
    playing = attempt.state(now) in ("created", "active")
    return rooms.summary(attempt.room, object_id, attempt.opened, playing=playing)
