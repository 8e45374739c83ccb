"""Who is calling: the `Principal` a bearer token maps to, or the anonymous one.

A leaf module like `agora.errors`: every layer may import it (the config builds principals,
transports and the server authenticate, toolsets read them on each call), and it imports
nothing from agora.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Every scope some tool checks: a principal configured with another one is a typo.
SCOPES = ("conductor", "operator", "star")
#: The name of the principal of a request that carried no token.
ANONYMOUS = "anonymous"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: from a bearer token, or anonymous."""

    name: str = ANONYMOUS
    scopes: frozenset[str] = frozenset()
    projects: frozenset[str] = frozenset()

    @property
    def anonymous(self) -> bool:
        """True for the principal of a request that carried no token."""
        return self.name == ANONYMOUS

    def has(self, scope: str) -> bool:
        """Whether this principal holds ``scope`` (e.g. ``operator``)."""
        return scope in self.scopes
