"""The shape of a room template: objects, a chain of lock slots, and which object opens when.

Templates are plain data written in `templates_chrono` and `templates_atelier`; `generate`
turns one into a `Room`. This module only declares the data types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agora.toolsets.chamber.lock import LockSpec


@dataclass(frozen=True, slots=True)
class ObjectSpec:
    """A template object; ``opens_with`` is the op of the lock whose opening unseals it."""

    id: str
    name: str
    summary: str
    flavor: str
    opens_with: str | None = None


@dataclass(frozen=True, slots=True)
class LockSlot:
    """A template lock: what it is, which objects may carry its clues, whether optional."""

    spec: LockSpec
    holders: tuple[str, ...]
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Template:
    """A family of rooms sharing a theme, objects and a chain of lock kinds."""

    id: str
    title: str
    intro: str
    objects: tuple[ObjectSpec, ...]
    locks: tuple[LockSlot, ...]
