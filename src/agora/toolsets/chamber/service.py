"""The chamber's tool handlers: arguments in, attempt commands out, envelopes back.

`Chamber` holds the contract, the attempt kind and the signing-key cache (a key that does
not load refuses the start, `Chamber.check_options`, and is logged once if configured later).
Each handler checks what only it can check (alias cutoff, identity, handle shape), draws
handles and seeds from `secrets`, sends one command to the attempt's actor with
``runtime.call`` and returns the envelope. Failures are raised as `ToolError`. This module
must not touch SQL directly except through `store` reads, and knows nothing of transports.
"""

from __future__ import annotations

import logging
import math
import os
import re
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from agora.logsafe import loggable
from agora.toolsets.chamber import store
from agora.toolsets.chamber.attempt import Rules
from agora.toolsets.chamber.cards import SCHEME
from agora.toolsets.chamber.commands import Act, CallForHelp, Enter, Observe, Quarantine, Seal
from agora.toolsets.chamber.entity import AttemptKind
from agora.toolsets.chamber.generate import build_room
from agora.toolsets.chamber.identity import (
    EntryChecks,
    check_entry_notice,
    check_free_text,
    check_product,
)
from agora.toolsets.chamber.invitation import (
    InvitationKind,
    IsRedeemed,
    Redeem,
    Redeemed,
    is_invitation,
    unknown,
)
from agora.toolsets.chamber.pool import RoomPool, pool_size
from agora.toolsets.chamber.ratelimit import LIMIT_SETTINGS, EntryLimiter, Limits, refusal
from agora.toolsets.chamber.replies import NotYours, failure, not_found, retired_alias
from agora.toolsets.chamber.sealing import SealOutcome, seal_reply
from agora.toolsets.chamber.signing import ALGORITHM, Signer, SigningKeyError, load_signer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.runtime.registry import Runtime
    from agora.toolsets.base import ToolCall
    from agora.toolsets.chamber.contract import ChamberContract

log = logging.getLogger(__name__)

#: What an entry on a seed the caller chose says (the card says ``practice: true`` only once
#: sealed, and an agent filling in every optional argument may not have meant it).
PRACTICE_NOTE = (
    "Practice run: you chose this room's seed, so its card will be marked practice and will"
    " not rank on the board. For a ranked run, enter again without seed."
)

HANDLE = re.compile(r"^chl-[0-9a-f]{16}$")


def new_handle() -> str:
    """A fresh, unguessable attempt handle."""
    return "chl-" + secrets.token_hex(8)


@dataclass
class Chamber:
    """The chamber toolset's handlers, bound to one contract."""

    contract: ChamberContract
    kind: AttemptKind = field(init=False)
    invitations: InvitationKind = field(default_factory=InvitationKind, init=False)
    _limiter: EntryLimiter = field(default_factory=EntryLimiter, init=False, repr=False)
    pool: RoomPool = field(init=False)
    _entry_checks: EntryChecks = field(init=False, repr=False)
    _signers: dict[str, Signer] = field(default_factory=dict, init=False, repr=False)
    #: Configured key paths that failed to load, each logged once.
    _unusable: set[str] = field(default_factory=set, init=False, repr=False)
    _room_builder: trio.Lock = field(default_factory=trio.Lock, init=False, repr=False)
    _limits_key: tuple[Any, ...] | None = field(default=None, init=False, repr=False)
    _limits_now: Limits = field(default_factory=Limits, init=False, repr=False)

    def __post_init__(self) -> None:
        self.kind = AttemptKind(Rules.from_contract(self.contract))
        active = [(s.id, s.engine) for s in self.contract.suites if s.status == "active"]
        self.pool = RoomPool(active)
        self._entry_checks = EntryChecks(self.contract)

    def _alias_gate(self, call: ToolCall) -> None:
        canonical = self.contract.aliases.get(call.tool)
        if canonical and self.contract.alias_expired(call.runtime.clock.wall()):
            until = self.contract.aliases_supported_until.isoformat()
            raise retired_alias(call.tool, canonical, until)

    def _handle(self, call: ToolCall) -> str:
        handle = str(call.args.get("challenge_handle", ""))
        if not HANDLE.match(handle):
            raise not_found(handle)
        return handle

    def check_options(self, options: Mapping[str, Any]) -> None:
        """The chamber's `Toolset.options_check`: every value of ``[options.chamber]`` read
        as the calls and the pool read it, at start, so a server never starts with one they
        would refuse (every entry, or the pool's refill, failing at run time instead).

        The signing key is loaded too (and kept): a key that cannot be used would otherwise
        leave every seal answering signature_unavailable, from a server that started fine.

        Raises:
            ValueError: a rate or the pool's size is below 0, or the signing key cannot be
                loaded (naming its path and why).
        """
        Limits.from_options(dict(options))
        pool_size(dict(options))
        if path := options.get("signing_key"):
            try:
                self._signers[str(path)] = load_signer(str(path))
            except SigningKeyError as exc:
                # The file tried: a relative path is the working directory's, not agora.toml's.
                tried = os.path.abspath(str(path))
                shown = (
                    path
                    if os.path.isabs(str(path))
                    else f"{path} ({tried}, relative to the working directory)"
                )
                raise ValueError(f"[options.chamber] signing_key {shown}: {exc}") from None

    async def signer(self, runtime: Runtime) -> tuple[Signer | None, bool]:
        """The configured signing key: (signer or None, whether a configured key is broken)."""
        path = runtime.options("chamber").get("signing_key")
        if not path:
            return None, False
        path = str(path)
        if path not in self._signers:
            try:
                self._signers[path] = await trio.to_thread.run_sync(load_signer, path)
            except SigningKeyError as exc:
                # The start refuses such a key; one configured since (or in a server that
                # skipped the check) is told to the operator once, not on every seal.
                if path not in self._unusable:
                    self._unusable.add(path)
                    log.error(
                        "chamber: the signing key %s cannot be used (%s); cards are sealed"
                        " pending_signature until it can",
                        loggable(path),
                        exc,
                    )
                return None, True
            self._unusable.discard(path)
        return self._signers[path], False

    async def public_keys(self, runtime: Runtime) -> dict[str, Any]:
        """The operator's public keys: the configured one and every one that signed a card."""
        signer, _ = await self.signer(runtime)
        known = await runtime.read(store.signing_keys)
        keys = {k["key_id"]: {**k, "current": False} for k in known}
        if signer is not None:
            mine = keys.get(signer.key_id, {"first_used": None})
            keys[signer.key_id] = {
                "key_id": signer.key_id,
                "alg": ALGORITHM,
                "public_key": signer.public_key_hex,
                "first_used": mine["first_used"],
                "current": True,
            }
        return {
            "toolset_id": self.contract.toolset_id,
            "scheme": SCHEME,
            "keys": list(keys.values()),
        }

    def _limits(self, options: dict[str, Any]) -> Limits:
        # The settings are read on every entry (an operator may change them) but parsed
        # only when they differ from the last ones parsed.
        key = tuple(map(options.get, LIMIT_SETTINGS))
        if key != self._limits_key:
            self._limits_now, self._limits_key = Limits.from_options(options), key
        return self._limits_now

    def _admit(self, call: ToolCall, now: float) -> None:
        limits = self._limits(call.runtime.options("chamber"))
        refused = self._limiter.take(limits, call.principal.name, call.connection, now)
        if refused is None:
            return
        which, wait = refused
        error, hint = refusal(which, anonymous=call.principal.anonymous)
        raise failure(
            "op_not_allowed",
            error,
            f"Wait {math.ceil(wait)} s, then call enter_open_challenge again{hint}.",
            retryable=True,
            retry_after_seconds=math.ceil(wait),
        )

    async def enter(self, call: ToolCall) -> dict[str, Any]:
        """``enter_open_challenge`` / ``start_challenge``."""
        self._alias_gate(call)
        notice = check_entry_notice(self.contract)
        declared = self._entry_checks(call.args, operator=call.principal.has("operator"))
        now = call.runtime.clock.monotonic()  # one reading for the limits and the pool
        self._admit(call, now)
        given = call.args.get("seed") or ""
        invitation = is_invitation(given)
        suite = declared.suite
        source = "participant" if given else "server"
        pooled = None if given else self.pool.take(suite.id, now)
        # A pooled room brings its handle, seed, salt and genesis head: draw them only for a
        # room built now.
        if pooled is not None:
            handle, seed, salt = pooled.handle, pooled.seed, pooled.salt
        else:
            handle, seed, salt = new_handle(), given or secrets.token_hex(8), secrets.token_hex(16)
        if invitation:
            # The ally's room: the server drew its seed and kept it; the token redeems once.
            redeem = Redeem(declared.identity["product"], call.args.get("suite"), handle)
            redeemed: Redeemed = await call.runtime.call(self.invitations, given, redeem)
            invited = self.contract.suite(redeemed.suite_id)
            if invited is None:  # pragma: no cover - invitations name contract suites
                raise unknown(given)
            suite, seed, source = invited, redeemed.seed, "server"
        # Generating a room is pure CPU, milliseconds and now and then over a hundred: do it
        # in a worker thread, one room at a time, so the event loop keeps serving everyone
        # else between GIL switches; the actor then finds the room in build_room's cache.
        if pooled is None:
            async with self._room_builder:
                await trio.to_thread.run_sync(build_room, suite.id, suite.engine, seed)
        command = Enter(
            suite_id=suite.id,
            generation=suite.generation,
            engine=suite.engine,
            seed=seed,
            seed_salt=salt,
            identity=declared.identity,
            assurance=declared.assurance,
            preflight=declared.preflight,
            principal=call.principal.name,
            via_alias=call.tool in self.contract.aliases,
            seed_source=source,
            room=None if pooled is None else pooled.room,
            head="" if pooled is None else pooled.head,
            opening=None if pooled is None else pooled.opening,
        )
        self.kind.fresh.add(handle)  # its actor's load need read no rows
        reply: dict[str, Any] = await call.runtime.call(self.kind, handle, command)
        reply.update(
            suite_generation=suite.generation,
            engine=suite.engine,
            assurance=declared.assurance,
            seed_source=source,
            invited=invitation,
            publication_notice=dict(notice),
        )
        if source != "server":
            reply.update(practice=True, note=PRACTICE_NOTE)
        return reply

    async def on_attempt(self, call: ToolCall, handle: str, command: Any) -> Any:
        """``command`` on attempt ``handle``, its reply.

        Another principal's attempt is refused as a missing one, in the same bytes and, as
        near as can be, in the same time: a handle never issued costs a store read (its
        lookup), so a refusal that found the attempt in memory reads as much first.

        Raises:
            ToolError: what the attempt answered (`NotYours` as ``attempt_not_found``).
        """
        runtime = call.runtime
        held = runtime.holds(self.kind, handle)
        try:
            return await runtime.call(self.kind, handle, command)
        except NotYours:
            if held:
                decoy, now = new_handle(), runtime.clock.now()  # a handle nobody holds
                await runtime.read(lambda conn: self.kind.load(conn, decoy, now))
            raise

    async def observe(self, call: ToolCall) -> dict[str, Any]:
        """``observe_chamber``."""
        handle = self._handle(call)
        command = Observe(object=str(call.args["object"]), caller=call.principal.name)
        reply: dict[str, Any] = await self.on_attempt(call, handle, command)
        return reply

    async def act(self, call: ToolCall) -> dict[str, Any]:
        """``chamber_action`` / ``challenge_action``."""
        self._alias_gate(call)
        handle = self._handle(call)
        args = call.args
        command = Act(
            op=str(args["op"]),
            object=args.get("object"),
            value=args.get("value"),
            expected_action_index=args.get("expected_action_index"),
            caller=call.principal.name,
        )
        reply: dict[str, Any] = await self.on_attempt(call, handle, command)
        return reply

    async def call_for_help(self, call: ToolCall) -> dict[str, Any]:
        """``call_for_help``: name an ally; it gets an invitation, never a seed."""
        handle = self._handle(call)
        ally = str(call.args.get("ally") or "").strip()
        if not ally:
            raise failure(
                "value_format_invalid",
                "ally is missing.",
                "Name the product id of the model to invite (e.g. claude-5); the ally declares "
                "its own identity when it enters.",
            )
        ally = check_product(ally, "ally")
        # 128 random bits: the ally's seed never leaves the server, only its invitation does.
        seed = secrets.token_hex(16)
        command = CallForHelp(ally=ally, seed=seed, caller=call.principal.name)
        reply: dict[str, Any] = await self.on_attempt(call, handle, command)
        invitation = reply["invitation"]
        if await call.runtime.call(self.invitations, invitation, IsRedeemed()):
            # Named before and already entered: the same invitation again would only be
            # refused at entry. Say so instead of handing it out as if it were live.
            del reply["ally_entry"]
            reply["redeemed"] = True
            reply["note"] = (
                f"{ally} already entered its room with this invitation, which redeems once. "
                "Name another ally to invite another."
            )
        return reply

    async def seal(self, call: ToolCall) -> dict[str, Any]:
        """``seal_attempt`` / ``finish_challenge``."""
        self._alias_gate(call)
        handle = self._handle(call)
        candidate = (call.args.get("next_candidate") or "").strip() or None
        if candidate:
            check_free_text("next_candidate", candidate)
        signer, broken = await self.signer(call.runtime)
        command = Seal(
            next_candidate=candidate,
            include_export_bundle=bool(call.args.get("include_export_bundle")),
            expected_action_index=call.args.get("expected_action_index"),
            signer=signer,
            key_broken=broken,
            caller=call.principal.name,
        )
        outcome: SealOutcome = await self.on_attempt(call, handle, command)
        if outcome.contradictions:
            log.warning(
                "chamber: card %s left unsigned: its figures contradict each other (%s); was"
                " the database edited?",
                outcome.card.card_id,
                "; ".join(outcome.contradictions),
            )
        signature = outcome.card.signature
        if outcome.already_sealed and signature is None:
            # An operator may have signed since this actor loaded: the store is the truth.
            card_id = outcome.card.card_id
            fresh = await call.runtime.read(lambda conn: store.load_card(conn, card_id))
            signature = fresh.signature if fresh is not None else None
        return seal_reply(outcome, signature, call.runtime.public_url)

    async def quarantine(self, runtime: Runtime, handle: str, reason: str) -> dict[str, Any]:
        """Operator action: seal ``handle`` as quarantined, with ``reason`` on its card.

        Args:
            runtime: The server runtime.
            handle: The attempt.
            reason: Why (printed on the public card; no personal data).

        Returns:
            The seal reply.

        Raises:
            ToolError: ``attempt_not_found``, ``attempt_already_sealed``, or ``identity_invalid``
                when the reason looks like personal data.
        """
        if not HANDLE.match(handle):
            raise not_found(handle)
        check_free_text("reason", reason)
        signer, _ = await self.signer(runtime)  # no usable key: the card waits for signing
        command = Quarantine(reason=reason, signer=signer)
        outcome: SealOutcome = await runtime.call(self.kind, handle, command)
        return seal_reply(outcome, outcome.card.signature, runtime.public_url)
