"""The handshake sessions of one server: their caps, eviction of idle ones, and idle expiry.

Sessions are capped overall (``max_sessions``) and per principal
(``max_sessions_per_principal``). A principal at its cap does not lock itself out: its new
session evicts its least recently used *idle* session (no call in flight, no stream being
read), whose client gets 404 on its next request and, as MCP says, starts a new session. Only
when every one of its sessions is busy is the newcomer refused (503). With no principals
configured every client is "anonymous", one principal: refusing at its cap would let one
client that opens sessions and never deletes them lock every other client out for
``session_idle_seconds``; evicting the idle ones lets everyone in, and a session doing work
(a call, an open stream) is never taken. A full server (``max_sessions``) lets a principal
replace one of its own idle sessions the same way, never another principal's. Evictions are
said in the log once per principal and episode (`agora.transports.episodes.Evictions`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from agora.transports.episodes import Episode, Evictions
from agora.transports.http_session import DELETED

if TYPE_CHECKING:
    from agora.config import Config
    from agora.transports.http_session import HttpSession

__all__ = ["EVICTED", "SessionTable"]

log = logging.getLogger("agora.transports.streamable")

EVICTED = "the session was evicted for a newer one of its principal"


class SessionTable:
    """The handshake sessions held, by id and, per principal, least recently used first."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.sessions: dict[str, HttpSession] = {}
        #: Per principal name, its sessions in the order they were last used (oldest first).
        self._lru: dict[str, dict[str, HttpSession]] = {}
        #: Initializes refused at ``max_sessions``, logged once per episode.
        self.full = Episode(log, "sessions")
        self.evictions = Evictions(log)

    def add(self, session: HttpSession) -> str | None:
        """Hold ``session``, evicting an idle one of its principal's if a cap says so; or
        why it cannot be held (every one of the principal's sessions is busy)."""
        name = session.principal.name
        held = self._lru.setdefault(name, {})
        if len(held) >= self.config.max_sessions_per_principal:
            cap = f"max_sessions_per_principal ({self.config.max_sessions_per_principal})"
            if not self._evict_idle(name, held, cap):
                return f"too many sessions for {name}; delete unused ones (DELETE) or retry later"
        elif len(self.sessions) >= self.config.max_sessions:
            if not self._evict_idle(name, held, f"max_sessions ({self.config.max_sessions})"):
                self.full.refuse(self.config.max_sessions)
                return "server full: too many sessions; retry later"
        else:
            self.evictions.ended(name)
        self.full.accept()
        self.sessions[session.id] = session
        self._lru.setdefault(name, {})[session.id] = session  # (an eviction may have emptied it)
        session.used = self.touch
        return None

    def _evict_idle(self, name: str, held: dict[str, HttpSession], cap: str) -> bool:
        """Drop the least recently used idle session in ``held``; False if none is idle."""
        for sid, old in held.items():  # oldest first; busy ones are passed over
            if not old.conn.in_flight and not old.readers:
                self.drop(sid, EVICTED)
                self.evictions.evicted(name, cap)
                return True
        return False

    def touch(self, session: HttpSession) -> None:
        """``session`` was just used: it becomes its principal's most recently used."""
        held = self._lru.get(session.principal.name)
        if held is not None and held.pop(session.id, None) is not None:
            held[session.id] = session
        session.last_used = trio.current_time()

    def drop(self, sid: str, reason: str = DELETED) -> None:
        """Close session ``sid`` and forget it."""
        session = self.sessions.pop(sid)
        session.close(reason)
        name = session.principal.name
        held = self._lru[name]
        del held[sid]
        if not held:
            del self._lru[name]

    def expire(self) -> int:
        """Close the sessions unused for ``session_idle_seconds``; how many were closed."""
        cutoff = trio.current_time() - self.config.session_idle_seconds
        idle = [sid for sid, s in self.sessions.items() if s.idle_since(cutoff)]
        for sid in idle:
            self.drop(sid)
        return len(idle)
