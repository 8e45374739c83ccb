"""The commands a debate topic accepts, by theme, all registered in one `CommandTable`.

Each theme module declares its command Structs and the pure handlers that apply them to a
`agora.toolsets.debate.topic.Topic`; importing this package registers every handler in
`COMMANDS` (see `table`). A new theme (debate/v1: claims, phases, judges, workers) is one
more module registering its own commands here; it keeps its micro-state beside the topic's
records, reads its configuration from ``TopicRow.protocol`` (validated at creation) and its
posts' structured fields from ``Post.extra``, and needs no change to the dispatch.
"""

from __future__ import annotations

from agora.toolsets.debate.commands import (
    bindings,
    creation,
    cursors,
    judging,
    lifecycle,
    maintenance,
    messages,
    rotation,
    wake,
    workers,
)
from agora.toolsets.debate.commands.table import COMMANDS

__all__ = [
    "COMMANDS",
    "bindings",
    "creation",
    "cursors",
    "judging",
    "lifecycle",
    "maintenance",
    "messages",
    "rotation",
    "wake",
    "workers",
]
