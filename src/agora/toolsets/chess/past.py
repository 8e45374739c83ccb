"""An earlier game of a table, rebuilt from its stored rows for its PGN (the page's
"Download PGN" with ``?game=N``). Reads committed rows only: no trio, no writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora.toolsets.chess import sql
from agora.toolsets.chess.stored import replay
from agora.toolsets.chess.table import ChessTable

if TYPE_CHECKING:
    from agora.store.neutral import ReadConn
    from agora.toolsets.chess.snapshot import Snapshot


def past_game(conn: ReadConn, key: str, number: int) -> Snapshot | None:
    """Game ``number`` of table ``key`` as its snapshot (for its PGN); None if there is none.

    Raises:
        LookupError: if the stored rows are inconsistent.
    """
    try:
        stored = sql.read_table(conn, key, number)
    except LookupError:
        return None  # no such game at this table
    if stored is None:
        return None
    return ChessTable(key, stored.table, replay(key, number, stored)).snapshot()
