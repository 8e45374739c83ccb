"""The router tool names this build serves and the Memory tools it leaves unlisted."""

from __future__ import annotations

from agora.toolsets.router.tools import HANDLERS

SERVED = frozenset(HANDLERS)
MEMORY_TOOLS: tuple[str, ...] = ()  # every Memory tool is served now
