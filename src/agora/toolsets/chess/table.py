"""The chess table entity: one authoritative game per table, driven one command at a time.

`ChessTable.handle` applies a command from `agora.toolsets.chess.commands` to the current
`Game` and returns `Effects`: the reply (a `Snapshot`, the `Tokens`, or a `ChessError` with
the snapshot attached), the SQL that makes the change durable, and whether waiters should wake.
Human and agent commands go through the same entity, so two moves can never land on one
turn. `ChessTables` is the `EntityKind` that rebuilds a table from the store. Pure: no I/O
beyond `load` reading committed rows, no trio, no awaits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Final

import msgspec

from agora.runtime.commands import CommandTable
from agora.runtime.entity import Effects, Write
from agora.toolsets.chess import sql
from agora.toolsets.chess.commands import (
    AcceptDraw,
    AgentMove,
    CheckToken,
    ChooseSide,
    CreateTable,
    HumanCommand,
    HumanMove,
    Look,
    NewAgentToken,
    NewGame,
    OfferDraw,
    Resign,
    Tokens,
    TrackPage,
)
from agora.toolsets.chess.game import Game, PastGame
from agora.toolsets.chess.sessions import AgentSessions, check_agent_token, same_token
from agora.toolsets.chess.snapshot import AGENT_FRESH_SECONDS, Snapshot
from agora.toolsets.chess.stored import replay
from agora.toolsets.chess.terms import AgentAbsence, ChessError, table_not_found

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.store.neutral import ReadConn

KIND_NAME: Final = "chess"


class ChessTable:
    """One table: its tokens and change version, and its current game."""

    #: Command type -> handler; every handler takes ``(self, command, at)``.
    commands: ClassVar[CommandTable[Effects]] = CommandTable()

    def __init__(
        self, name: str, row: sql.TableRow | None = None, game: Game | None = None
    ) -> None:
        self.name = name
        self.row = row
        self.game = game if game is not None else Game(1)
        self._snapshot: Snapshot | None = None
        #: The monotonic time of the last call with the agent token: presence lives in
        #: memory only (the row's ``agent_seen_at`` only records when an agent last arrived).
        self.agent_seen: float | None = None
        self._mono = 0.0
        #: The human's pages with their live stream open (`TrackPage`), whether the human
        #: came at all, and when their last page closed: in memory only, as presence is.
        self.human_pages = 0
        self.human_came = False
        self.human_left_at: str | None = None
        #: The game the agent was last shown, and if it was over; the game it missed the end of.
        self._agent_saw: tuple[int, bool] | None = None
        self._missed: PastGame | None = None
        self._telling: PastGame | None = None
        #: The human's draw offer the agent's last reply showed, as (game number, offers
        #: made so far): a move declines only an offer its agent was shown (in memory only,
        #: as presence is: after a restart the agent's next look shows it again).
        self._offer_shown: tuple[int, int] | None = None
        #: The human's offer pending when the table was loaded (a restart): whether the agent
        #: saw it is not known; the ply of the agent move that let it stand for that reason.
        self._offer_at_load = self._human_offer()
        self._sight_unknown_ply: int | None = None
        #: What each agent connection was last shown (`AgentSessions`; in memory only).
        self.sessions = AgentSessions()

    # -- the Entity protocol ----------------------------------------------------------------

    @property
    def vacant(self) -> bool:
        """No table by this name (yet): the runtime keeps no actor for a lookup of one."""
        return self.row is None

    def handle(self, command: object, now: Now) -> Effects:
        """Apply one command.

        Args:
            command: One of the Structs of `agora.toolsets.chess.commands`.
            now: The clock reading; its wall time stamps moves and results.

        Returns:
            Effects whose reply is a `Snapshot` (a token for `CreateTable`, a bool for
            `CheckToken`), or a `ChessError` carrying the snapshot when refused.
        """
        at = now.wall.isoformat()
        self._mono = now.mono
        try:
            effects = self._dispatch(command, at)
        except ChessError as err:
            err.snapshot = self.snapshot() if self.row is not None else None
            effects = Effects(reply=err)
        finally:
            telling, self._telling = self._telling, None
        if telling is not None:
            effects.reply = self._told(effects.reply, telling)
        return effects

    @staticmethod
    def _told(reply: object, missed: PastGame) -> object:
        """``reply`` (a snapshot, or a refusal carrying one) with ``missed`` in its snapshot."""
        if isinstance(reply, Snapshot):
            return msgspec.structs.replace(reply, missed=missed)
        if isinstance(reply, ChessError) and isinstance(reply.snapshot, Snapshot):
            reply.snapshot = msgspec.structs.replace(reply.snapshot, missed=missed)
        return reply

    def snapshot(self) -> Snapshot:
        """The table as it stands.

        Every change bumps the version, so one immutable snapshot serves every reader of a
        version: each parked waiter and page stream re-reads the table after each change.
        """
        assert self.row is not None
        cached = self._snapshot
        absence = self._absence()
        present = absence is None
        shared = present and self.sessions.shared(self._mono)
        if (
            cached is not None
            and cached.version == self.row.version
            and cached.game_number == self.game.number
            and cached.agent_absence == absence
            and cached.human_came == self.human_came
            and cached.human_connected == (self.human_pages > 0)
            and cached.agent_shared == shared
        ):
            return cached
        game = self.game
        self._snapshot = Snapshot(
            table=self.name,
            version=self.row.version,
            game_number=game.number,
            fen=game.board.fen(),
            phase=game.phase,
            agent_color=game.agent_color,
            moves=game.moves,
            draw_offer=game.draw_offer,
            declined_ply=game.declined_ply,
            human_offers=game.human_offers,
            unseen_plies=game.unseen_plies,
            result=game.result,
            agent_present=present,
            agent_token=self.row.agent_token,
            human_came=self.human_came,
            human_connected=self.human_pages > 0,
            human_left_at=self.human_left_at,
            offer_sight_unknown=bool(game.moves) and game.moves[-1].ply == self._sight_unknown_ply,
            agent_absence=absence,
            agent_shared=shared,
        )
        return self._snapshot

    # -- dispatch ----------------------------------------------------------------------------

    def _dispatch(self, command: object, at: str) -> Effects:
        if self.row is None and not isinstance(command, CreateTable):
            raise table_not_found(self.name)
        return self.commands.dispatch(self, command, at)

    @commands.on(CheckToken)
    def _check_token(self, command: CheckToken, at: str) -> Effects:
        assert self.row is not None
        if self._token_ok(command.token):
            return Effects(reply="human")
        agent = self.row.agent_token is not None and same_token(command.token, self.row.agent_token)
        return Effects(reply="agent" if agent else None)

    @commands.on(AgentMove)
    def _agent_move(self, command: AgentMove, at: str) -> Effects:
        self._check_agent(command.agent_token)
        self._agent_looks()
        arrived = self._saw_agent(at, command.session)
        offer = self._human_offer()
        shared = self.snapshot().agent_shared
        try:
            stale = self.sessions.stale(command.session, self.game, self._mono)
            if stale is not None:
                # The refusal shows the board as it stands (FEN, legal moves): it is a look.
                self.sessions.saw(command.session, self.game)
                raise ChessError("NOT_YOUR_TURN", f"Not played: {stale}.")
            played = self.game.play(
                "agent",
                command.from_square,
                command.to_square,
                command.promotion,
                command.note,
                at,
                offer_seen=self._offer_shown == offer,
            )
        except ChessError as err:
            if not arrived:
                if self.snapshot().agent_shared == shared:
                    raise
                # The stale move found another connection's: the pages say so now.
                err.snapshot = self.snapshot()
                return Effects(reply=err, changed=True)
            # Refused, but the agent just arrived: the pages hear of it now, as after a Look,
            # not at their next poll.
            announced = self._changed()
            err.snapshot = announced.reply
            return Effects(reply=err, writes=announced.writes, changed=True)
        if offer is not None and offer == self._offer_at_load and offer != self._offer_shown:
            self._sight_unknown_ply = played.ply  # it stood: the restart forgot its sight
        self._shows_offer()  # an offer that stood through the move: its reply shows it
        self.sessions.saw(command.session, self.game)
        return self._changed(sql.insert_move(self.name, self.game.number, played))

    @commands.on(TrackPage)
    def _track_page(self, command: TrackPage, at: str) -> Effects:
        self._check_human(command.token)
        self.human_pages = max(0, self.human_pages + (1 if command.connected else -1))
        self.human_left_at = None if self.human_pages else at
        # No version bump and nothing to store: presence is not part of the game.
        return Effects(reply=self.snapshot(), changed=True)

    @commands.on(HumanCommand)
    def _human(self, command: HumanCommand, at: str) -> Effects:
        self._check_human(command.token)
        game = self.game
        match command:
            case ChooseSide(agent_color=color):
                game.choose_side(color)
            case HumanMove():
                played = game.play(
                    "human",
                    command.from_square,
                    command.to_square,
                    command.promotion,
                    command.note,
                    at,
                )
                return self._changed(sql.insert_move(self.name, game.number, played))
            case Resign():
                game.resign("human", at)
            case OfferDraw():
                game.offer_draw("human", at)
            case AcceptDraw():
                game.accept_draw("human", at)
            case NewGame():
                if game.phase == "side_choice":  # nothing to abandon: sides are open already
                    return Effects(reply=self.snapshot())
                return self._new_game(at)
            case NewAgentToken(agent_token=agent_token):
                assert self.row is not None
                self.row.agent_token = agent_token
                self.row.agent_seen_at = None
                self.agent_seen = None  # present again once the new holder calls
                self.sessions = AgentSessions()  # the old token's connections hold no seat
        return self._changed()

    @commands.on(CreateTable)
    def _create(self, command: CreateTable, at: str) -> Effects:
        if self.row is not None:
            if command.must_be_new:
                raise ChessError("TABLE_EXISTS", f"chess table {self.name!r} already exists.")
            return Effects(reply=Tokens(self.row.token, self.row.agent_token))
        self.row = sql.TableRow(self.name, command.token, at, 1, 1, None, command.agent_token)
        self.game = Game(1)
        writes = [sql.insert_table(self.row), sql.insert_game(self.name, self.game, at)]
        reply = Tokens(command.token, command.agent_token)
        return Effects(reply=reply, writes=writes, changed=True)

    def _check_human(self, token: str) -> None:
        """Refuse a caller without the human token; note that the human came."""
        if not self._token_ok(token):
            raise ChessError("FORBIDDEN", "only the human's page, with its token, may do this.")
        self.human_came = True

    def _check_agent(self, token: str | None) -> None:
        """Refuse a caller without this table's current agent token."""
        assert self.row is not None
        check_agent_token(token, self.row.agent_token)

    @commands.on(Look)
    def _look(self, command: Look, at: str) -> Effects:
        assert self.row is not None
        if command.agent_token is None:
            return Effects(reply=self.snapshot())
        self._check_agent(command.agent_token)
        self._agent_looks()
        self._shows_offer()
        arrived = self._saw_agent(at, command.session)
        self.sessions.saw(command.session, self.game)
        if arrived:
            return self._changed()  # wakes the pages: the agent is here
        return Effects(reply=self.snapshot())

    def _agent_looks(self) -> None:
        """The agent token's holder is shown the game: this command's reply tells it how the
        game it last saw unfinished ended, if the human replaced that game since (once)."""
        self._telling, self._missed = self._missed, None
        self._agent_saw = (self.game.number, self.game.phase == "over")

    def _human_offer(self) -> tuple[int, int] | None:
        """The human's pending draw offer as (game number, offers made so far), or None."""
        if self.game.draw_offer != "human":
            return None
        return (self.game.number, len(self.game.human_offers))

    def _shows_offer(self) -> None:
        """The agent's reply now shows the human's pending offer, if there is one."""
        if self.game.draw_offer == "human":
            self._offer_shown = self._human_offer()

    def _present(self) -> bool:
        return self._absence() is None

    def _absence(self) -> AgentAbsence | None:
        """Why no agent counts as present, None if one does (`Snapshot.agent_absence`)."""
        assert self.row is not None
        if self.agent_seen is not None:
            return None if self._mono - self.agent_seen <= AGENT_FRESH_SECONDS else "stale"
        # The row keeps when an agent last arrived across restarts; a new token clears it.
        return "token" if self.row.agent_seen_at is None else "restart"

    def _saw_agent(self, at: str, session: str | None) -> bool:
        """Note a call with the agent token (already checked) on connection ``session``;
        True if the agent just arrived."""
        assert self.row is not None
        arrived = not self._present()
        self.agent_seen = self._mono
        self.sessions.called(session, self._mono)
        if arrived:
            self.row.agent_seen_at = at
        return arrived

    def _new_game(self, at: str) -> Effects:
        old = self.game
        writes: list[Write] = []
        if old.abandon(at) is not None:
            writes.append(sql.update_game(self.name, old))
        if self._agent_saw == (old.number, False):  # the agent saw it unfinished
            self._missed = PastGame(old.number, old.agent_color, old.result)
        self.game = Game(old.number + 1)
        writes.append(sql.insert_game(self.name, self.game, at))
        return self._changed(*writes)

    def _changed(self, *writes: Write) -> Effects:
        """Bump the version and persist the game and table rows along with ``writes``."""
        assert self.row is not None
        self.row.version += 1
        self.row.game_no = self.game.number
        all_writes = [
            *writes,
            sql.update_game(self.name, self.game),
            sql.update_table(self.row),
        ]
        return Effects(reply=self.snapshot(), writes=all_writes, changed=True)

    def _token_ok(self, token: str) -> bool:
        assert self.row is not None
        return same_token(token, self.row.token)


class ChessTables:
    """The `EntityKind` of chess tables: rebuilds a table by replaying its current game."""

    kind: str = KIND_NAME

    def load(self, conn: ReadConn, key: str, now: Now) -> ChessTable:
        """Build the table ``key`` from committed rows; a missing table is "not yet created".

        Raises:
            LookupError: if the stored rows are inconsistent.
        """
        stored = sql.read_table(conn, key)
        if stored is None:
            return ChessTable(key)
        return ChessTable(key, stored.table, replay(key, stored.table.game_no, stored))


#: The one kind instance shared by the tools and the pages.
KIND: Final = ChessTables()
