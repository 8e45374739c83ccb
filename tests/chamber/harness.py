"""Drive one attempt entity directly (no runtime): what the 1000-seed tests and unit tests use.

`Session` enters an attempt on a fresh `AttemptEntity` and exposes ``act`` with the
signature the reference solver expects; refusals are raised as `ToolError`. `memory_db` and
`commit_writes` replay a session's writes into a real (in-memory) SQLite store.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agora.errors import ToolError
from agora.runtime.clock import Now
from agora.store.migrations import apply_migrations
from agora.toolsets.chamber import cards, store
from agora.toolsets.chamber.attempt import Rules
from agora.toolsets.chamber.commands import Act, Enter, Seal
from agora.toolsets.chamber.contract import ChamberContract, default_contract
from agora.toolsets.chamber.entity import AttemptEntity, SealOutcome

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.toolsets.chamber.signing import Signer

START = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
IDENTITY = {
    "provider_claim": "acme",
    "product": "gpt-5.6-sol",
    "model_claim": "m",
    "host": "cursor",
}


def rules(contract: ChamberContract | None = None) -> Rules:
    return Rules.from_contract(contract or default_contract())


@dataclass
class Session:
    """One attempt on a bare entity, with a hand-driven wall clock."""

    suite: str = "chambre-chrono-v0"
    seed: str = "seed"
    handle: str = "chl-0123456789abcdef"
    wall: dt.datetime = START
    #: Who drew the seed: ``participant`` makes a practice card.
    seed_source: str = "server"
    entity: AttemptEntity = field(init=False)
    writes: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        r = rules()
        suite = default_contract().suite(self.suite)
        assert suite is not None
        self.entity = AttemptEntity(r, self.handle, None)
        self.entered = self.send(
            Enter(suite.id, suite.generation, suite.engine, self.seed, "00" * 16, dict(IDENTITY),
                  "participant_claimed", seed_source=self.seed_source)
        )  # fmt: skip

    @property
    def now(self) -> Now:
        return Now(0.0, self.wall)

    def send(self, command: Any) -> Any:
        effects = self.entity.handle(command, self.now)
        self.writes.extend(effects.writes)
        if isinstance(effects.reply, ToolError):
            raise effects.reply
        return effects.reply

    def act(self, op: str, object: str | None = None, value: Any = None,
            expected: int | None = None) -> dict[str, Any]:  # fmt: skip
        reply: dict[str, Any] = self.send(Act(op, object, value, expected))
        return reply

    def seal(self, **kw: Any) -> SealOutcome:
        outcome: SealOutcome = self.send(Seal(**kw))
        return outcome

    @property
    def room(self) -> Any:
        assert self.entity.attempt is not None
        return self.entity.attempt.room


@dataclass
class QuickSession:
    """The same rules as `Session`, applied with `attempt.step` alone (no transcript hashing).

    For agents that burn all 64 actions on thousands of rooms: the pure step function decides
    every reply field the agents read.
    """

    suite: str = "chambre-chrono-v0"
    seed: str = "seed"
    attempt: Any = field(init=False)

    def __post_init__(self) -> None:
        from agora.toolsets.chamber.attempt import Attempt

        suite = default_contract().suite(self.suite)
        assert suite is not None
        self.attempt = Attempt(
            rules(), "chl-0123456789abcdef", suite.id, suite.generation, suite.engine,
            self.seed, "00" * 16, dict(IDENTITY), "participant_claimed", None, "anonymous",
            START, START + dt.timedelta(hours=2),
        )  # fmt: skip

    def act(self, op: str, object: str | None = None, value: Any = None) -> dict[str, Any]:
        from agora.toolsets.chamber.attempt import step

        a = self.attempt
        done = step(a, Act(op, object, value), START)
        if isinstance(done, ToolError):
            raise done
        a.opened, a.hint_level, a.hints_used, a.wrong = (
            done.opened, done.hint_level, done.hints_used, done.wrong,
        )  # fmt: skip
        a.action_index += 1
        terminal = a.solved or a.action_index >= a.rules.max_actions
        reply = {"observation": done.observation, "terminal": terminal, "locks_open": a.opened}
        if done.accepted is not None:
            reply["accepted"] = done.accepted
        return reply


def memory_db() -> sqlite3.Connection:
    """An in-memory SQLite store with the chamber's migrations applied."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    apply_migrations(conn, store.MIGRATIONS)
    return conn


def commit_writes(conn: sqlite3.Connection, writes: Iterable[tuple[str, Any]]) -> None:
    """Commit ``writes`` (statement, parameters) in one transaction."""
    conn.execute("BEGIN")
    for sql, params in writes:
        conn.execute(sql, params)
    conn.execute("COMMIT")


def signed_before_the_scheme(signer: Signer, seed: str = "old") -> dict[str, Any]:
    """A sealed card's document with the signature block the server wrote before statements
    carried a scheme: a signature over the body bytes alone (such cards still verify)."""
    body = Session(seed=seed).seal().card.body
    old = {
        "alg": "Ed25519",
        "key_id": signer.key_id,
        "public_key": signer.public_key_hex,
        "signed_at": "2026-11-30T12:00:00Z",
        "value": signer.sign(body),
    }
    document: dict[str, Any] = json.loads(cards.publish(body, old))
    return document
