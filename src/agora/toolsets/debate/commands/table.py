"""The one command table of the debate topic: command type -> handler.

Each theme module (`bindings`, `messages`, `cursors`, `lifecycle`) registers its handlers
here with ``@COMMANDS.on(CommandType)``; `agora.toolsets.debate.commands` imports them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from agora.runtime.commands import CommandTable

if TYPE_CHECKING:
    from agora.runtime.entity import Effects

COMMANDS: Final[CommandTable[Effects]] = CommandTable()
