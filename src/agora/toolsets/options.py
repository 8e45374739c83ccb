"""The keys a toolset accepts in its ``[options.<name>]`` table of agora.toml, checked at start.

A toolset declares them in `Toolset.options`: each key it reads, with the type of its value
(`OptionSpec`). The server checks every served toolset's table against its declaration
before it opens anything (`check_toolset_options`) and refuses to start on a key the toolset
does not read (a misspelling: ``workspace_root`` for ``workspace_roots`` would otherwise be
ignored, and the router would find no authorized roots) or on a value of the wrong type,
with one message naming the table, the key and the closest known key. A table naming
neither a served toolset nor a built-in one (``[options.chambr]``, an embedder's
``[options.note]`` for its ``notes``) is refused there too, with the closest name: only
here are the served toolsets known (`agora.config.load_config` accepts any table, for a
toolset of an embedding program), and a misspelt table would leave its toolset on its
defaults in silence. A built-in toolset's table is accepted while that toolset is not
served, unchecked (``[options.chess]`` under ``--toolsets debate``). A toolset that
declares nothing (``options = None``, an embedder's) has its table passed on unchecked, as
before; one that declares ``{}`` takes no options at all. What a type cannot say (a rate
that must not be negative, a key file that must load) a toolset checks in its
`Toolset.options_check` hook, run at the same moment on the table whose types passed, with
the very functions that read the values at run time (`bounded` words a range the same way
for every toolset): a value the toolset would refuse on its first call, or in a background
task, stops the server at start instead. This module reads no file; a toolset's hook may.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.toolsets.base import Toolset

#: What a toolset declares: each key -> the type of its value. A type is ``str``, ``int``,
#: ``float`` (any number), ``bool``, ``list[T]`` of one of these, ``dict`` (any table),
#: ``typing.Any`` (anything), or a nested `OptionSpec` for a sub-table whose keys are
#: checked in turn (``[options.router.adapter]``).
OptionSpec = Mapping[str, Any]
#: A toolset's start-time check of its table (`Toolset.options_check`): given the table (its
#: types checked already, when the toolset declares them), it raises `ValueError` naming the
#: table, the key and what is wrong (``[options.chamber] enter_per_minute must be at least 0,
#: not -5``).
OptionsCheck = Callable[[Mapping[str, Any]], None]

N = TypeVar("N", int, float)


class OptionsError(ValueError):
    """A ``[options.<name>]`` table a served toolset cannot run with (see the module)."""


def check_toolset_options(
    options: Mapping[str, Mapping[str, Any]],
    toolsets: Sequence[Toolset],
    built_in: Sequence[str] = (),
) -> None:
    """Check that every table of ``options`` names a toolset, then the table of every
    toolset in ``toolsets`` that declares its keys.

    Args:
        options: The ``[options.<name>]`` tables, by name.
        toolsets: The toolsets served.
        built_in: The names of agora's own toolsets (`agora.config.SERVABLE`, which this
            layer does not import): their tables are accepted, unchecked, while they are
            not served.

    Raises:
        OptionsError: a table naming neither a toolset of ``toolsets`` nor one of
            ``built_in``, a key the toolset does not read, a value of the wrong type, or
            one its `Toolset.options_check` refuses (a value out of range, a key file that
            does not load).
    """
    known = list(dict.fromkeys([*(t.name for t in toolsets), *built_in]))
    for table in options:
        if table not in known:
            raise OptionsError(f"[options.{table}] names no toolset{_table_hint(table, known)}")
    for toolset in toolsets:
        values = options.get(toolset.name, {})
        if toolset.options is not None:
            check_options(toolset.name, toolset.options, values)
        if toolset.options_check is not None:
            try:
                toolset.options_check(values)
            except OptionsError:
                raise
            except ValueError as exc:  # the toolset's own words: one line, no traceback
                raise OptionsError(str(exc)) from exc


def bounded(
    table: str, values: Mapping[str, Any], key: str, default: N, least: N, *, above: bool = False
) -> N:
    """``values[key]`` (``default`` when it is absent), if it is at least ``least``, or more
    than ``least`` with ``above``: how a toolset reads a number of its table, at start (in its
    `Toolset.options_check`) and at run time alike.

    Raises:
        OptionsError: the value is out of range: ``[options.<table>] <key> must be at least
            <least>, not <value>`` (``more than`` with ``above``).
    """
    value: N = values.get(key, default)
    if value < least or (above and value == least):
        bound = f"more than {least:g}" if above else f"at least {least:g}"
        shown = value if isinstance(value, int) else f"{value:g}"
        raise OptionsError(f"[options.{table}] {key} must be {bound}, not {shown}")
    return value


def check_options(table: str, spec: OptionSpec, values: Mapping[str, Any]) -> None:
    """Check ``values``, the table ``[options.<table>]``, against ``spec``.

    Raises:
        OptionsError: the first key ``spec`` lacks (with the closest one it has) or the
            first value whose type is wrong, naming the table and the key.
    """
    where = f"[options.{table}]"
    for key, value in values.items():
        if key not in spec:
            raise OptionsError(f"{where}: unknown key `{key}`{_hint(key, spec)}")
        kind = spec[key]
        if isinstance(kind, Mapping):
            if not isinstance(value, Mapping):
                raise OptionsError(f"{where}: {key} must be a table, not {_article(value)}")
            check_options(f"{table}.{key}", kind, value)
        elif not _fits(value, kind):
            raise OptionsError(f"{where}: {key} must be {_described(kind)}, not {_article(value)}")


def _table_hint(table: str, known: Sequence[str]) -> str:
    """The closest of the ``known`` toolset names to ``table``, and all of them."""
    near = difflib.get_close_matches(table, known, n=1, cutoff=0.6)
    shown = ", ".join(known)
    return f"; did you mean `{near[0]}`? (known: {shown})" if near else f"; known: {shown}"


def _hint(key: str, spec: OptionSpec) -> str:
    if not spec:
        return "; it takes no options"
    near = difflib.get_close_matches(key, list(spec), n=1, cutoff=0.6)
    known = ", ".join(sorted(spec))
    return f"; did you mean `{near[0]}`? (known: {known})" if near else f" (known: {known})"


def _fits(value: Any, kind: Any) -> bool:
    """Whether ``value`` (as TOML gives it) is of the declared ``kind``."""
    if kind is Any:
        return True
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    origin = typing.get_origin(kind)
    if origin is list:
        (item,) = typing.get_args(kind) or (Any,)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if origin is dict or kind is dict:
        return isinstance(value, dict)
    return isinstance(value, kind)


_WORDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def _described(kind: Any) -> str:
    """``kind`` in words: ``list[str]`` is "a list of strings"."""
    if kind in _WORDS:
        return _WORDS[kind]
    if typing.get_origin(kind) is list:
        (item,) = typing.get_args(kind) or (Any,)
        if item is Any:
            return "a list"
        return "a list of " + _described(item).removeprefix("a ").removeprefix("an ") + "s"
    if kind is dict or typing.get_origin(kind) is dict:
        return "a table"
    if isinstance(kind, types.UnionType):
        return " or ".join(_described(k) for k in typing.get_args(kind))
    return getattr(kind, "__name__", str(kind))


def _article(value: Any) -> str:
    """What ``value`` is, in words (``"a string"``, ``"a list"``...)."""
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    for kind in (int, float, str):
        if isinstance(value, kind):
            return _WORDS[kind]
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a table"
    return type(value).__name__
