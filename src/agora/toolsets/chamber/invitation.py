"""Invitations: how an ally named by ``call_for_help`` enters its own room without seeing it.

``call_for_help`` never hands the caller the ally's seed: the server draws the seed, keeps it,
and answers an invitation token. The ally enters with that token as its ``seed`` argument
(the contract's schema has no other place for it); the server redeems the token once, for the
product it names, and builds the room from the seed it kept, so the card of that attempt is
server-seeded. One `InvitationEntity` per token serialises redemptions: a token redeems at
most once. Pure: no I/O beyond `InvitationKind.load` reading committed rows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.runtime.entity import Effects
from agora.toolsets.chamber import store
from agora.toolsets.chamber.replies import failure

if TYPE_CHECKING:
    from agora.errors import ToolError
    from agora.runtime.clock import Now
    from agora.store.neutral import ReadConn

KIND_NAME: Final = "chamber_invitation"
PREFIX: Final = "inv-"


def token_for(seed: str) -> str:
    """The invitation token of a server-drawn ally seed (reveals nothing of the seed)."""
    return PREFIX + hashlib.sha256(f"scoreia-chamber-invitation\n{seed}".encode()).hexdigest()[:32]


def is_invitation(seed_argument: str) -> bool:
    """Whether an ``enter_open_challenge`` seed argument is an invitation token."""
    return seed_argument.startswith(PREFIX)


class Redeem(msgspec.Struct, frozen=True, tag=True):
    """Redeem the invitation for ``product`` entering ``suite_id`` (None: the invited suite)."""

    product: str
    suite_id: str | None
    handle: str


class IsRedeemed(msgspec.Struct, frozen=True, tag=True):
    """Ask whether the invitation has been redeemed (answers a bool; False if unknown)."""


@dataclass(frozen=True, slots=True)
class Invitation:
    """One invitation as stored."""

    token: str
    inviter: str
    ally: str
    suite_id: str
    seed: str
    redeemed_by: str | None


@dataclass(frozen=True, slots=True)
class Redeemed:
    """A redemption's answer: the suite and the seed the server kept for the ally's room."""

    suite_id: str
    seed: str


def unknown(token: str) -> ToolError:
    """The refusal for a token that is not an invitation this server issued: its format is
    fine (``value_format_invalid`` would send an agent trying other spellings)."""
    return failure(
        "op_not_allowed",
        f"seed {token[:40]!r} is not an invitation this server issued.",
        "Leave seed out to enter a fresh room, or ask your inviter for the invitation that "
        "its call_for_help answered.",
        retryable=False,  # the same token can never succeed again
    )


def used(token: str) -> ToolError:
    """The refusal for an invitation already redeemed: it enters one room, once (a code
    that says nothing of its format, which is fine)."""
    return failure(
        "op_not_allowed",
        f"seed {token[:40]!r} is an invitation already redeemed: it enters one room, once.",
        "Leave seed out to enter a fresh room of your own.",
        retryable=False,
    )


class InvitationEntity:
    """One invitation token (or the empty slot of an unknown one)."""

    def __init__(self, token: str, invitation: Invitation | None) -> None:
        self.key = token
        self.invitation = invitation

    @property
    def vacant(self) -> bool:
        """No invitation by this token: the runtime keeps no actor for a made-up one."""
        return self.invitation is None

    def handle(self, command: Any, now: Now) -> Effects:
        """Apply `Redeem` or `IsRedeemed`; does no I/O."""
        inv = self.invitation
        if isinstance(command, IsRedeemed):
            return Effects(reply=inv is not None and inv.redeemed_by is not None)
        if not isinstance(command, Redeem):
            raise TypeError(f"not an invitation command: {command!r}")
        if inv is None:
            return Effects(reply=unknown(self.key))
        if inv.redeemed_by is not None:
            return Effects(reply=used(self.key))
        if command.product != inv.ally:
            return Effects(
                reply=failure(
                    "claim_conflict",
                    f"This invitation is for product {inv.ally}, not {command.product}.",
                    f"Enter with product={inv.ally}, or leave seed out to enter a fresh room.",
                )
            )
        if command.suite_id is not None and command.suite_id != inv.suite_id:
            return Effects(
                reply=failure(
                    "claim_conflict",
                    f"This invitation is for suite {inv.suite_id}, not {command.suite_id}.",
                    f"Enter with suite={inv.suite_id}, or leave suite out.",
                )
            )
        self.invitation = Invitation(
            inv.token, inv.inviter, inv.ally, inv.suite_id, inv.seed, command.handle
        )
        write = store.redeem_invitation(inv.token, command.handle, now.wall)
        return Effects(reply=Redeemed(inv.suite_id, inv.seed), writes=[write], changed=True)


@dataclass
class InvitationKind:
    """Loads invitations from the store."""

    kind: str = KIND_NAME

    def load(self, conn: ReadConn, key: str, now: Now) -> InvitationEntity:
        """The invitation ``key`` as committed (an empty slot if unknown)."""
        row = store.load_invitation(conn, key)
        return InvitationEntity(key, None if row is None else Invitation(*row))
