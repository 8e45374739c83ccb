"""CommandTable: one small handler per command type instead of an isinstance chain."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from agora.runtime.commands import CommandTable


@dataclass
class Post:
    text: str


@dataclass
class Edit:
    text: str


@dataclass
class Pin(Edit):
    pass


@dataclass
class Close:
    pass


@dataclass
class Open:
    pass


Lifecycle = Close | Open


class Thread:
    commands: ClassVar[CommandTable[str]] = CommandTable()

    def __init__(self) -> None:
        self.log: list[str] = []

    def handle(self, command: object) -> str:
        return self.commands.dispatch(self, command, "now")

    @commands.on(Post)
    def _post(self, command: Post, at: str) -> str:
        self.log.append(command.text)
        return f"posted {command.text} at {at}"

    @commands.on(Edit)
    def _edit(self, command: Edit, at: str) -> str:
        return f"edited to {command.text}"


# A second module can register handlers as free functions into the same table.
@Thread.commands.on(Lifecycle)
def lifecycle(thread: Thread, command: Close | Open, at: str) -> str:
    return type(command).__name__.lower()


@pytest.mark.parametrize(
    ("command", "reply"),
    [
        pytest.param(Post("hi"), "posted hi at now", id="exact-type"),
        pytest.param(Edit("x"), "edited to x", id="another-type"),
        pytest.param(Pin("y"), "edited to y", id="subclass-uses-base-handler"),
        pytest.param(Close(), "close", id="union-member"),
        pytest.param(Open(), "open", id="other-union-member"),
    ],
)
def test_dispatch_finds_the_handler_of_the_command_type(command, reply):
    assert Thread().handle(command) == reply


def test_the_handler_runs_on_the_entity_it_was_given():
    thread = Thread()
    thread.handle(Post("a"))
    thread.handle(Post("b"))
    assert thread.log == ["a", "b"]
    assert Thread().log == []


def test_an_unknown_command_is_a_type_error():
    with pytest.raises(TypeError, match="no handler for command str"):
        Thread().handle("not a command")


def test_a_type_gets_one_handler_only():
    table: CommandTable[None] = CommandTable()
    table.on(Post)(lambda entity, command: None)
    with pytest.raises(ValueError, match="Post already has a handler"):
        table.on(Post)(lambda entity, command: None)
    with pytest.raises(ValueError, match="at least one"):
        table.on()
    with pytest.raises(ValueError, match="not a command type"):
        table.on("Post")


def test_the_registered_types_are_listed():
    assert Thread.commands.types == {Post, Edit, Close, Open}
