"""Entities with many commands: a table from command type to one small handler each.

An entity with twenty commands should not grow one `handle` with an `isinstance` chain.
It declares a `CommandTable`, registers one handler per command type with `on`, and its
`handle` calls `dispatch`. Handlers are methods (``def _look(self, command, now)``) or free
functions taking the entity first, so a big entity can split its handlers by theme over
several modules that all register into one table. Lookup is by the command's exact type,
then its base classes, memoised; a union alias (``HumanCommand = A | B``) registers each
member. Pure like the entities it serves: no I/O, no trio.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, Generic, TypeVar

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


class CommandTable(Generic[R]):
    """Command type -> handler, for one entity kind.

    Example::

        class Table:
            commands: ClassVar[CommandTable[Effects]] = CommandTable()

            def handle(self, command: object, now: Now) -> Effects:
                return self.commands.dispatch(self, command, now)

            @commands.on(Look)
            def _look(self, command: Look, now: Now) -> Effects: ...
    """

    def __init__(self) -> None:
        self._handlers: dict[type, Callable[..., R]] = {}
        self._resolved: dict[type, Callable[..., R]] = {}

    @property
    def types(self) -> frozenset[type]:
        """The command types registered directly."""
        return frozenset(self._handlers)

    def on(self, *command_types: Any) -> Callable[[F], F]:
        """Register the decorated function as the handler of ``command_types``.

        Args:
            command_types: Classes, or union aliases of classes (each member is registered).

        Returns:
            A decorator that returns the function unchanged.

        Raises:
            ValueError: if a type already has a handler in this table, or none was given.
        """
        expanded = [t for given in command_types for t in _members(given)]
        if not expanded:
            raise ValueError("register a handler for at least one command type")

        def register(fn: F) -> F:
            for command_type in expanded:
                if command_type in self._handlers:
                    raise ValueError(f"{command_type.__name__} already has a handler")
                self._handlers[command_type] = fn
            self._resolved.clear()
            return fn

        return register

    def handler(self, command: object) -> Callable[..., R]:
        """The handler for ``command``: its type's, else its nearest base class's.

        Raises:
            TypeError: if no handler is registered for the command's type or its bases.
        """
        command_type = type(command)
        found = self._resolved.get(command_type)
        if found is None:
            for base in command_type.__mro__:
                found = self._handlers.get(base)
                if found is not None:
                    break
            else:
                raise TypeError(f"no handler for command {command_type.__name__}")
            self._resolved[command_type] = found
        return found

    def dispatch(self, entity: object, command: object, *args: Any) -> R:
        """Call the handler of ``command`` as ``handler(entity, command, *args)``.

        Raises:
            TypeError: if no handler is registered for the command's type or its bases.
        """
        found = self._resolved.get(type(command))  # `handler`'s usual case, one call fewer
        if found is None:
            found = self.handler(command)
        return found(entity, command, *args)


def _members(given: Any) -> list[type]:
    if isinstance(given, types.UnionType) or typing.get_origin(given) is typing.Union:
        return [t for member in typing.get_args(given) for t in _members(member)]
    if not isinstance(given, type):
        raise ValueError(f"not a command type: {given!r}")
    return [given]
