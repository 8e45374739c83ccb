"""Whether a hook a toolset hands over can be called as the server calls it.

A tool handler is called ``await handler(call)``, a background task ``await task(runtime)``,
a `periodic` step the same: `handler_problem` says, from the definition alone, what would
keep such a call from working (not callable, not async, a parameter it would not get), so that
the mistake is refused when the hook is handed over (`agora.toolsets.base.hook_problems` at
start, `agora.runtime.background.periodic` when called), not on its first call or tick. It
lives in the runtime so that the runtime's own hooks are checked by the same words; the
toolsets' module re-exports it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, get_origin


def handler_problem(
    handler: object, takes: Sequence[str] = ("the ToolCall",), returns: str = "dict[str, Any]"
) -> str | None:
    """What keeps ``handler`` from being a tool handler, which the server calls as
    ``await handler(call)``; None when nothing does. The other hooks a toolset gives the
    server are checked alike, with what they are called with as ``takes`` (a resource's read:
    the ToolCall; `Toolset.reject_call`: the ToolCall and the problems; a background task:
    the Runtime) and the type their awaitable gives as ``returns`` (for the annotation a
    refusal suggests: ``None`` for `Toolset.on_start` and a background task).

    A handler makes an awaitable: an ``async def`` function or method, or a plain function
    whose return annotation says it returns one (``-> Coroutine[Any, Any, dict[str, Any]]``,
    as the debate's posting handlers do to hand over their worker's coroutine), or a
    `functools.partial`, a decorator's wrapper naming one as ``__wrapped__``
    (`functools.wraps`) or an object whose ``__call__`` is one. It can be called with one
    positional argument, the `ToolCall`: any other parameter has a default. A callable
    whose signature cannot be read (some builtins) is taken as it is.

    Returns:
        A phrase that follows the handler's name (``is not callable (a str)``, ...).
    """
    if not callable(handler):
        return f"is not callable (a {type(handler).__name__})"
    if not _makes_awaitable(handler):
        return (
            "is not async: declare it `async def` (the server awaits what it returns), or"
            f" annotate the awaitable it returns (`-> Coroutine[Any, Any, {returns}]`)"
        )
    try:
        parameters = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):  # no signature to read: judged when called
        return None
    positional = [p for p in parameters if p.kind in _POSITIONAL]
    given = " and ".join(takes)
    if len(positional) < len(takes) and not any(p.kind is p.VAR_POSITIONAL for p in parameters):
        if not positional and len(takes) == 1:
            return f"takes no positional parameter: it must take one, {given}"
        return f"takes {len(positional)} positional parameters: it must take {given}"
    needed = [p.name for p in positional[len(takes) :] if p.default is p.empty]
    needed += [p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if needed:
        names = ", ".join(needed)
        return f"needs more than {given} ({names}, without defaults): it gets only that"
    return None


def shown_name(hook: object) -> str:
    """How a refusal names a handler or hook: its qualified name, else its type's name."""
    return getattr(hook, "__qualname__", None) or type(hook).__name__


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
#: A return annotation, as written (``from __future__ import annotations``), of an awaitable.
_AWAITABLE = re.compile(r"(?:[\w.]+\.)?(?:Awaitable|Coroutine)\b")


def _makes_awaitable(handler: Callable[..., Any]) -> bool:
    """Whether calling ``handler`` makes an awaitable, as far as its definition says."""
    while isinstance(handler, functools.partial):
        handler = handler.func
    if inspect.isclass(handler):  # calling it makes an instance
        return False
    candidates = [handler]
    with contextlib.suppress(ValueError):  # a __wrapped__ cycle
        candidates.append(inspect.unwrap(handler))
    if not inspect.isroutine(handler):  # a callable object
        candidates.append(type(handler).__call__)
    return any(inspect.iscoroutinefunction(f) or _returns_awaitable(f) for f in candidates)


def _returns_awaitable(function: Callable[..., Any]) -> bool:
    try:
        annotation = inspect.signature(function).return_annotation
    except (TypeError, ValueError):
        return False
    if isinstance(annotation, str):
        return _AWAITABLE.match(annotation) is not None
    origin = get_origin(annotation) or annotation
    return isinstance(origin, type) and issubclass(origin, Awaitable)
