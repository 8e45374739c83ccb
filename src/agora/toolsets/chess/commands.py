"""The commands a chess table accepts, as tagged msgspec Structs.

Agent commands carry no credential: the agent is whoever holds the table's MCP endpoint, and
the tool handlers only ever build `Look` and `AgentMove`. Every human command carries the
table's secret token, which the table entity checks before anything else, so the agent's
endpoint cannot perform a human action and neither can a page without the token.
This module only declares data.
"""

from __future__ import annotations

import msgspec

from agora.toolsets.chess.game import ColorName


class CreateTable(msgspec.Struct, frozen=True, tag=True):
    """Create the table with its first game; ``must_be_new=False`` makes it idempotent.

    Replies with the table's human token (the existing one when it already exists).
    """

    token: str
    must_be_new: bool = True


class Look(msgspec.Struct, frozen=True, tag=True):
    """Read the table. ``agent=True`` also records, once, that an agent has arrived."""

    agent: bool = False


class AgentMove(msgspec.Struct, frozen=True, tag=True):
    """The agent plays one move, with an optional note for the human."""

    from_square: str
    to_square: str
    promotion: str | None = None
    note: str | None = None


class CheckToken(msgspec.Struct, frozen=True, tag=True):
    """Reply whether ``token`` is this table's human token."""

    token: str


class ChooseSide(msgspec.Struct, frozen=True, tag=True):
    """The human decides who plays which colour."""

    token: str
    agent_color: ColorName


class HumanMove(msgspec.Struct, frozen=True, tag=True):
    """The human plays one move, with an optional note for the agent."""

    token: str
    from_square: str
    to_square: str
    promotion: str | None = None
    note: str | None = None


class Resign(msgspec.Struct, frozen=True, tag=True):
    """The human resigns the current game."""

    token: str


class OfferDraw(msgspec.Struct, frozen=True, tag=True):
    """The human offers a draw (agreed at once if the agent's offer is pending)."""

    token: str


class AcceptDraw(msgspec.Struct, frozen=True, tag=True):
    """The human accepts the agent's pending draw offer."""

    token: str


class NewGame(msgspec.Struct, frozen=True, tag=True):
    """The human starts a new game; an unfinished one is recorded as abandoned."""

    token: str


HumanCommand = ChooseSide | HumanMove | Resign | OfferDraw | AcceptDraw | NewGame
Command = CreateTable | Look | AgentMove | CheckToken | HumanCommand
