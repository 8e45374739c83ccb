"""The attempt entity: applies chamber commands to one attempt and says what to write.

`AttemptEntity.handle` takes a command from `commands` and returns `Effects`: the reply (an
envelope dict, a `SealOutcome`, or a `ToolError` to raise), the SQL that makes the change
durable, and ``changed``. Every command is checked before anything changes, so a refusal
writes nothing. Sealing builds the card once, signs it if a key was handed in, and stores its
bytes for good; a second seal only points at the first card. `AttemptKind` rebuilds an
attempt from the store. Pure: no I/O beyond `load` reading committed rows, no trio.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final

from agora.errors import ToolError
from agora.runtime.entity import Effects
from agora.toolsets.chamber import cards, store
from agora.toolsets.chamber.attempt import Attempt, Rules, SealedCard, closed_words, observe, step
from agora.toolsets.chamber.commands import (
    Act,
    CallForHelp,
    Enter,
    Expire,
    Observe,
    Quarantine,
    Seal,
)
from agora.toolsets.chamber.consistency import contradictions, sealed_state
from agora.toolsets.chamber.invitation import token_for
from agora.toolsets.chamber.opening import entry_reply
from agora.toolsets.chamber.replies import failure, not_found, not_yours
from agora.toolsets.chamber.sealing import RetiredCard, SealOutcome, seal_reply

__all__ = ["AttemptEntity", "AttemptKind", "RetiredCard", "SealOutcome", "seal_reply"]
from agora.toolsets.chamber.transcript import chain

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.store.neutral import ReadConn

KIND_NAME: Final = "chamber_attempt"
MAX_ALLIES: Final = 3

#: The identity claims an ally adds to `ally_entry`'s arguments: only it can make them.
ALLY_ADDS: Final = ("provider_claim", "model_claim", "host")


class AttemptEntity:
    """One attempt (or the empty slot a new handle names, or a retired session's card)."""

    def __init__(
        self,
        rules: Rules,
        handle: str,
        attempt: Attempt | None,
        retired: RetiredCard | None = None,
    ) -> None:
        self.rules = rules
        self.key = handle
        self.attempt = attempt
        self.retired = retired

    @property
    def vacant(self) -> bool:
        """No attempt and no card under this handle: the runtime keeps no actor for a
        lookup of a made-up handle (`agora.runtime.entity.Entity`)."""
        return self.attempt is None and self.retired is None

    def handle(self, command: Any, now: Now) -> Effects:
        """Apply one command; return its effects. Does no I/O."""
        if isinstance(command, Enter):
            return self._enter(command, now.wall)
        if self.attempt is None and self.retired is not None:
            return self._after_retention(self.retired, command)
        if self.attempt is None:
            return Effects(reply=not_found(self.key))
        if not _may_use(self.attempt, command):
            # A named principal's attempt answers everyone else exactly as a missing one.
            return Effects(reply=not_yours(self.key))
        a = self.attempt
        match command:
            case Observe(object=object_id):
                seen = observe(a, object_id, now.wall)
                if isinstance(seen, ToolError):
                    return Effects(reply=seen)
                body = a.envelope(now.wall)
                return Effects(reply={**body, "object": object_id, "observation": seen})
            case Act():
                return self._act(a, command, now.wall)
            case CallForHelp():
                return self._help(a, command, now.wall)
            case Seal():
                return self._seal(a, command, now.wall)
            case Quarantine() | Expire():
                return self._server_seal(a, command, now.wall)
        raise TypeError(f"not a chamber command: {command!r}")

    def _server_seal(self, a: Attempt, command: Quarantine | Expire, wall: dt.datetime) -> Effects:
        if isinstance(command, Quarantine):
            if a.card is not None:
                return Effects(reply=a.refusal(wall))
            seal = Seal(signer=command.signer)
            return self._close(a, wall, "quarantined", seal, command.reason, "operator")
        # Abandoning a run leaves the same trace as sealing it: a dated card.
        if a.card is not None or wall < a.expires_at:
            return Effects(reply=None)
        return self._expire(a, wall, Seal(signer=command.signer))

    def _expire(self, a: Attempt, wall: dt.datetime, c: Seal) -> Effects:
        # The one card of an attempt past its TTL, made by the sweep or by a seal that beat
        # it: the same outcome (a room solved in time stays solved), sealed_by, sealed_at (the
        # expiry) and so date and card id, whoever got there first.
        return self._close(a, wall, "solved" if a.solved else "expired", c, None, "expiry")

    def _after_retention(self, r: RetiredCard, command: Any) -> Effects:
        # The session is gone but the handle -> card link is forever: a second seal
        # still answers the first card; play answers that the attempt is sealed.
        if not _may_use(r, command):
            return Effects(reply=not_yours(self.key))
        c = r.card
        state = sealed_state(c.outcome, c.body, c.signature is not None, r.quarantined)
        if isinstance(command, Seal):
            envelope = {
                "ok": True, "attempt_handle": self.key, "attempt_state": state,
                "toolset_id": self.rules.toolset_id, "suite_id": r.suite_id,
                "allowed_ops": [], "allowed_next_tools": ["enter_open_challenge"],
                "terminal": True, "must_seal": False,
            }  # fmt: skip
            outcome = SealOutcome(
                envelope=envelope,
                card=r.card,
                already_sealed=True,
                quarantined=r.quarantined,
                handle=self.key,
                include_export_bundle=command.include_export_bundle,
                transcript_retired=True,
            )
            return Effects(reply=outcome)
        return Effects(
            reply=failure(
                "attempt_already_sealed",
                f"{closed_words(r.card.card_id, r.card.outcome, None)}; its session has been"
                " retired.",
                "Call enter_open_challenge to start a new attempt.",
                attempt_handle=self.key,
                attempt_state=state,
                card_id=r.card.card_id,
            )
        )

    def _enter(self, c: Enter, wall: dt.datetime) -> Effects:
        if self.attempt is not None or self.retired is not None:
            raise RuntimeError(f"attempt handle collision on {self.key}")
        a = Attempt(
            rules=self.rules, handle=self.key, suite_id=c.suite_id, generation=c.generation,
            engine=c.engine, seed=c.seed, seed_salt=c.seed_salt, identity=dict(c.identity),
            assurance=c.assurance, preflight=c.preflight, principal=c.principal,
            created_at=wall, expires_at=wall + self.rules.ttl, via_alias=c.via_alias,
            seed_source=c.seed_source, head=c.head,
        )  # fmt: skip
        if c.room is not None:
            a._room = c.room  # built ahead by the pool: the same room the seed gives
        reply = entry_reply(a, wall, c.opening)
        writes = [store.insert_attempt(a)]
        self.attempt = a
        return Effects(reply=reply, writes=writes, changed=True)

    def _act(self, a: Attempt, c: Act, wall: dt.datetime) -> Effects:
        done = step(a, c, wall)
        if isinstance(done, ToolError):
            return Effects(reply=done)
        head, record = chain(a.head, done.record)
        index = a.action_index
        a.opened, a.hint_level, a.hints_used, a.wrong = (
            done.opened, done.hint_level, done.hints_used, done.wrong,
        )  # fmt: skip
        a.head = head
        a.action_index = index + 1
        a.transcript.append(record)
        reply: dict[str, Any] = {**a.envelope(wall), "op": c.op, "observation": done.observation}
        if done.accepted is not None:
            reply["accepted"] = done.accepted
        return Effects(
            reply=reply, writes=store.record_action(a, index, record, head), changed=True
        )

    def _help(self, a: Attempt, c: CallForHelp, wall: dt.datetime) -> Effects:
        refusal = a.refusal(wall)
        if refusal is not None:
            return Effects(reply=refusal)
        state = a.state(wall)
        if state not in ("created", "active"):
            return Effects(
                reply=failure(
                    "op_not_allowed",
                    f"call_for_help is not open in state {state}: the attempt is over.",
                    "Call seal_attempt to publish the card.",
                    attempt_handle=a.handle,
                    attempt_state=state,
                    allowed_next_tools=["seal_attempt"],
                    must_seal=True,
                )
            )
        known = dict(a.allies)
        writes = []
        if c.ally not in known:
            if len(known) >= MAX_ALLIES:
                return Effects(
                    reply=failure(
                        "op_not_allowed",
                        f"This attempt has already named {MAX_ALLIES} allies.",
                        "Carry on alone, or seal the attempt.",
                        attempt_handle=a.handle,
                        attempt_state=a.state(wall),
                    )
                )
            known[c.ally] = c.seed
            a.allies.append((c.ally, c.seed))
            token = token_for(c.seed)
            writes.append(store.insert_ally(a.handle, c.ally, c.seed, wall))
            writes.append(
                store.insert_invitation(token, a.handle, c.ally, a.suite_id, c.seed, wall)
            )
        invitation = token_for(known[c.ally])
        reply = {
            "ok": True,
            "attempt_handle": a.handle,
            "attempt_state": a.state(wall),
            "toolset_id": self.rules.toolset_id,
            "ally": c.ally,
            "invitation": invitation,
            "ally_entry": {
                "tool": "enter_open_challenge",
                "arguments": {"product": c.ally, "suite": a.suite_id, "seed": invitation},
                # The server cannot know the ally's own claims: the ally adds them.
                "ally_adds": list(ALLY_ADDS),
                "note": (
                    "Not complete on its own: the ally adds its own "
                    f"{', '.join(ALLY_ADDS[:-1])} and {ALLY_ADDS[-1]} (unknown is accepted)."
                ),
            },
            "note": (
                "The ally never joins this room. It enters its own room with this invitation "
                "as its seed; the server keeps the room's seed, so nobody can see it first."
            ),
        }
        return Effects(reply=reply, writes=writes, changed=bool(writes))

    def _seal(self, a: Attempt, c: Seal, wall: dt.datetime) -> Effects:
        if a.card is not None:
            return Effects(
                reply=SealOutcome(
                    envelope=a.envelope(wall),
                    card=a.card,
                    already_sealed=True,
                    quarantined=a.quarantined,
                    handle=a.handle,
                    transcript=tuple(a.transcript),
                    include_export_bundle=c.include_export_bundle,
                )
            )
        if c.expected_action_index is not None and c.expected_action_index != a.action_index:
            return Effects(
                reply=failure(
                    "stale_action_index",
                    f"expected_action_index {c.expected_action_index} is stale; the transcript "
                    f"has {a.action_index} actions.",
                    f"Retry seal_attempt with expected_action_index={a.action_index}.",
                    attempt_handle=a.handle,
                    attempt_state=a.state(wall),
                    current_action_index=a.action_index,
                )
            )
        if wall >= a.expires_at:  # the sweep's card: nothing of this call goes on it
            late = Seal(
                signer=c.signer,
                key_broken=c.key_broken,
                include_export_bundle=c.include_export_bundle,
            )
            return self._expire(a, wall, late)
        return self._close(a, wall, "solved" if a.solved else "failed", c, None)

    def _close(
        self,
        a: Attempt,
        wall: dt.datetime,
        outcome: str,
        c: Seal,
        reason: str | None,
        sealed_by: str = "participant",
    ) -> Effects:
        # An expired card is sealed as of the expiry, not of the sweep that found it (a node
        # down across midnight would date it a day late); its signature keeps the real time.
        when = a.expires_at if sealed_by == "expiry" else wall
        sealed_at = when.astimezone(dt.UTC).replace(microsecond=0)
        sealing = cards.Sealing(
            outcome=outcome,
            sealed_at=sealed_at,
            schema_bundle_hash=self.rules.schema_bundle_hash,
            notice_hash=self.rules.notice_hash,
            next_candidate=c.next_candidate,
            quarantine_reason=reason,
            sealed_by=sealed_by,
        )
        fields = cards.card_body(a, sealing)
        body = cards.canonical(fields)
        # A card whose figures contradict each other (an edited database) is never signed.
        faults = tuple(contradictions(fields))
        signature = None
        if c.signer is not None and not faults:
            signature = cards.signature_block(c.signer, body, wall)
        card = SealedCard(
            cards.card_id_for(a.handle, sealed_at), body, sealed_at, outcome, signature
        )
        writes = store.insert_card(a, card, quarantined=reason is not None)
        a.card = card
        a.quarantined = reason is not None
        outcome_reply = SealOutcome(
            envelope=a.envelope(wall),
            card=card,
            already_sealed=False,
            quarantined=a.quarantined,
            handle=a.handle,
            transcript=tuple(a.transcript),
            include_export_bundle=c.include_export_bundle,
            key_broken=c.key_broken,
            contradictions=faults,
        )
        return Effects(reply=outcome_reply, writes=writes, changed=True)


def _may_use(attempt: Attempt | RetiredCard, command: Any) -> bool:
    """Whether ``command``'s caller may act on ``attempt``.

    Anonymous attempts are capabilities: whoever holds the handle may use them. An attempt
    entered by a named principal belongs to that principal alone. Operator commands that
    carry no caller (quarantine) are not tool calls and always pass.
    """
    caller = getattr(command, "caller", None)
    return caller is None or attempt.principal == "anonymous" or caller == attempt.principal


def retired(attempt: Attempt, wall: dt.datetime) -> bool:
    """Whether the attempt's session is past retention (its card stays).

    An unsealed attempt never retires: the expiry sweep publishes its card first.
    """
    if attempt.card is not None:
        return wall > attempt.card.sealed_at + attempt.rules.retention
    return False


@dataclass
class AttemptKind:
    """Loads attempts from the store (``kind`` names the actors of this toolset)."""

    rules: Rules
    kind: str = KIND_NAME
    #: Handles just drawn by ``enter`` and not yet loaded: nothing in the store can carry
    #: them (they are fresh 64-bit random draws), so their load reads no rows.
    fresh: set[str] = field(default_factory=set, repr=False)
    #: Those handles are new to every process on a shared store too: no other process drew
    #: them, so a guarded store asks `create` as well and reads no version for them.
    create_on_shared: ClassVar[bool] = True

    def create(self, key: str, now: Now) -> AttemptEntity | None:
        """The empty slot of a handle ``enter`` just drew, without reading the store."""
        if key not in self.fresh:
            return None
        self.fresh.discard(key)
        return AttemptEntity(self.rules, key, None)

    def load(self, conn: ReadConn, key: str, now: Now) -> AttemptEntity:
        """The attempt ``key`` as committed; an empty slot if unknown or retired."""
        if key in self.fresh:  # a store that reads versions loads fresh handles too
            self.fresh.discard(key)
            return AttemptEntity(self.rules, key, None)
        attempt = store.load_attempt(conn, key, self.rules)
        if attempt is not None and retired(attempt, now.wall):
            attempt = None
        if attempt is not None:
            # Build the room here, where a file store reads (a worker thread), rather than on
            # the event loop at the attempt's first command: generation can take a while.
            _ = attempt.room
            return AttemptEntity(self.rules, key, attempt)
        found = store.card_of_handle(conn, key)
        if found is None:
            return AttemptEntity(self.rules, key, None)
        card, principal, suite_id = found
        gone = RetiredCard(card, principal, suite_id, card.outcome == "quarantined")
        return AttemptEntity(self.rules, key, None, gone)
