"""The commands a chess table accepts, as tagged msgspec Structs.

The agent's seat is held by credential: `AgentMove` carries the agent token from the
caller's endpoint URL (None when it had none), and `Look` may carry one to announce the
seated agent; the table entity checks it, so a caller without the token can watch but
never move. The tool handlers only ever build `Look` and `AgentMove`. Every human command
carries the table's human token, checked before anything else, so the agent cannot perform
a human action and neither can a page without the token. This module only declares data.
"""

from __future__ import annotations

import msgspec

from agora.toolsets.chess.terms import ColorName


class CreateTable(msgspec.Struct, frozen=True, tag=True):
    """Create the table with its first game; ``must_be_new=False`` makes it idempotent.

    Replies with the table's `Tokens` (the existing ones when it already exists).
    """

    token: str
    agent_token: str
    must_be_new: bool = True


class Tokens(msgspec.Struct, frozen=True):
    """The reply to `CreateTable`: the human's token and the agent's."""

    human: str
    agent: str


class Look(msgspec.Struct, frozen=True, tag=True):
    """Read the table.

    With ``agent_token`` the caller claims the agent's seat: a wrong token is refused, the
    right one records, once, that the agent has arrived. Without it, anyone may look.
    """

    agent_token: str | None = None
    #: The caller's connection (an opaque id), to remember what it was shown; None: unknown.
    session: str | None = None


class AgentMove(msgspec.Struct, frozen=True, tag=True):
    """The agent plays one move, with an optional note for the human.

    ``agent_token`` is the token from the caller's endpoint URL; None or a wrong one is
    refused before the move is looked at.
    """

    agent_token: str | None
    from_square: str
    to_square: str
    promotion: str | None = None
    note: str | None = None
    #: The caller's connection (`Look.session`): a move from one last shown another game
    #: or position is refused.
    session: str | None = None


class CheckToken(msgspec.Struct, frozen=True, tag=True):
    """Reply whose token ``token`` is at this table: ``"human"``, ``"agent"`` (its current
    agent token: a page opened with the agent's link is told which link it needs), or
    ``None``."""

    token: str


class TrackPage(msgspec.Struct, frozen=True, tag=True):
    """Count the human's page at the table: its live stream opened (``connected``) or ended.

    It carries the human token like every human command, but changes no game: the table
    only learns whether the human is present, for the agent's replies.
    """

    token: str
    connected: bool


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


class NewAgentToken(msgspec.Struct, frozen=True, tag=True):
    """The human replaces the agent token; the old one stops working at once."""

    token: str
    agent_token: str


HumanCommand = ChooseSide | HumanMove | Resign | OfferDraw | AcceptDraw | NewGame | NewAgentToken
Command = CreateTable | Look | AgentMove | CheckToken | TrackPage | HumanCommand
