"""The chess page API's request bodies, decoded into the table's human commands.

Each ``parse`` takes a POST body (JSON, no unknown field) and answers the `HumanCommand` it
asks for, or raises msgspec's ``ValidationError`` / ``DecodeError`` for the caller to refuse
(`agora.toolsets.chess.web`). Pure: no I/O.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

import msgspec

from agora.toolsets.chess.commands import (
    AcceptDraw,
    ChooseSide,
    HumanCommand,
    HumanMove,
    NewAgentToken,
    NewGame,
    OfferDraw,
    Resign,
)
from agora.toolsets.chess.terms import ColorName

if TYPE_CHECKING:
    from collections.abc import Callable


class TokenBody(msgspec.Struct, forbid_unknown_fields=True):
    """The body of an action that needs only the token."""

    token: str


class SideBody(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """The body of ``/side``: which colour the agent plays."""

    token: str
    agent_color: ColorName


class MoveBody(msgspec.Struct, forbid_unknown_fields=True):
    """The body of ``/move``."""

    token: str
    from_square: str = msgspec.field(name="from")
    to_square: str = msgspec.field(name="to")
    promotion: str | None = None
    note: str | None = None


class CreateBody(msgspec.Struct, forbid_unknown_fields=True):
    """The body of ``POST /play/tables``; a random name when omitted."""

    name: str | None = None


def side(body: bytes) -> HumanCommand:
    b = msgspec.json.decode(body, type=SideBody)
    return ChooseSide(b.token, b.agent_color)


def move(body: bytes) -> HumanCommand:
    b = msgspec.json.decode(body, type=MoveBody)
    return HumanMove(b.token, b.from_square, b.to_square, b.promotion, b.note)


def new_agent_token(body: bytes) -> HumanCommand:
    token = msgspec.json.decode(body, type=TokenBody).token
    return NewAgentToken(token, secrets.token_urlsafe(24))


def token_only(
    kind: type[Resign | OfferDraw | AcceptDraw | NewGame],
) -> Callable[[bytes], HumanCommand]:
    def parse(body: bytes) -> HumanCommand:
        return kind(msgspec.json.decode(body, type=TokenBody).token)

    parse.__name__ = kind.__name__
    return parse
