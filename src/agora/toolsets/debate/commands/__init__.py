"""The commands a debate topic accepts, by theme, and the one table that dispatches them.

Each theme module declares its command Structs and the pure functions that apply them to a
`agora.toolsets.debate.topic.Topic`; `DISPATCH` maps command type -> function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.debate.commands import bindings, cursors, lifecycle, messages

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.runtime.clock import Now
    from agora.runtime.entity import Effects
    from agora.toolsets.debate.topic import Topic

DISPATCH: Final[dict[type, Callable[[Topic, Any, Now], Effects]]] = {
    **bindings.DISPATCH,
    **messages.DISPATCH,
    **cursors.DISPATCH,
    **lifecycle.DISPATCH,
}
