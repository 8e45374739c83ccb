"""The debate view of a call's principal (`handlers.common.caller`), which every call asks."""

from __future__ import annotations

from typing import Any

from agora.identity import Principal
from agora.toolsets.base import ToolCall
from agora.toolsets.debate.handlers.common import caller


def _call(principal: Principal) -> ToolCall:
    runtime: Any = None  # the view never touches the runtime
    return ToolCall(tool="debate_state", args={}, principal=principal, runtime=runtime)


def test_the_view_follows_the_principal_object_not_only_its_name() -> None:
    # A reloaded config makes new principals under the same names: a view made for the
    # old object must not answer for the new one (scopes and projects may differ).
    plain = Principal("carol", projects=frozenset({"alpha"}))
    first = caller(_call(plain))
    assert (first.conductor, first.projects) == (False, frozenset({"alpha"}))
    assert caller(_call(plain)) is first  # the same object: the view is reused
    twin = Principal("carol", projects=frozenset({"alpha"}))  # another connection's
    assert caller(_call(twin)) is first  # an equal principal: reused too
    promoted = Principal("carol", scopes=frozenset({"conductor"}), projects=frozenset({"b"}))
    second = caller(_call(promoted))
    assert (second.name, second.conductor, second.projects) == ("carol", True, frozenset({"b"}))
    assert caller(_call(plain)).conductor is False  # and back again


class _Counted(frozenset[str]):
    """Projects that count the comparisons made with them (a principal compares its fields)."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        type(self).compared += 1
        return super().__eq__(other)

    __hash__ = frozenset.__hash__


def test_a_connections_principal_is_compared_once_not_on_every_call() -> None:
    # Each connection has its own principal object; under load every call of every
    # connection but one compared its principal field by field with the last one seen.
    view = caller(_call(Principal("dave", projects=frozenset({"alpha"}))))
    other = Principal("dave", projects=_Counted({"alpha"}))  # another connection's
    for _ in range(5):
        assert caller(_call(other)) is view
    assert _Counted.compared == 1
