"""An MCP endpoint by its path, or a refusal that says which endpoints there are.

``server.client("/mcp/nothere")``, ``serve_stdio`` and ``agora stdio --endpoint`` refused a
path naming no endpoint without saying which exist, where agora's other refusals (a tool, a
toolset, an option) name the closest choice: this one names them all, and the closest.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agora.server.app import App, Endpoint

#: How alike (difflib's ratio) a path's toolset name and a served one are to be suggested.
NEAR = 0.75


def served_endpoint(app: App, path: str) -> Endpoint:
    """``app``'s endpoint at ``path`` (`App.endpoint`).

    Raises:
        ValueError: ``path`` names none; the message is `no_endpoint`'s.
    """
    endpoint = app.endpoint(path)
    if endpoint is None:
        raise ValueError(no_endpoint(app, path))
    return endpoint


def endpoint_paths(app: App) -> list[str]:
    """``/mcp``, then ``/mcp/<toolset>`` for each toolset ``app`` serves (and
    ``/mcp/<toolset>/<param>`` where the toolset takes one: chess's ``<table>``)."""
    paths = ["/mcp"]
    for name, toolset in app.toolsets.items():
        paths.append(f"/mcp/{name}")
        if toolset.endpoint_param:
            paths.append(f"/mcp/{name}/<{toolset.endpoint_param}>")
    return paths


#: A path segment shown as it is: a name (a toolset's, a table's). Anything else (a token
#: typed after ``&`` or ``/`` instead of ``?``) is shown as ``…``, with all after it.
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}")


def shown_path(path: str) -> str:
    """``path`` as a log line or refusal shows it: its query as ``?…`` (`shown_url`), and
    from the first segment that is no name on, ``…``: a seat token pasted after ``&`` or ``/``
    instead of ``?`` is never shown either."""
    base, mark, _ = path.partition("?")
    shown: list[str] = []
    for part in base.split("/"):
        if part and (not _NAME.fullmatch(part) or "token" in part.lower()):
            shown.append("…")
            break
        shown.append(part)
    return "/".join(shown) + ("?…" if mark else "")


def no_endpoint(app: App, path: str) -> str:
    """That ``path`` is no MCP endpoint of ``app``: the closest one, if one is close, and
    every one. The path's query is shown as ``?…`` (a chess agent's seat token travels there)."""
    parts = [p for p in path.partition("?")[0].split("/") if p]
    # The toolset it meant: /mcp/<name>..., or a path missing its /mcp (/chess, /mpc/chess).
    asked = parts[1] if len(parts) > 1 else parts[0] if parts else ""
    # Closer than difflib's default: a letter or two off (/mcp/nothere is not /mcp/router).
    near = difflib.get_close_matches(asked, list(app.toolsets), n=1, cutoff=NEAR)
    hint = f"; did you mean /mcp/{near[0]}?" if near else ""
    return (
        f"{shown_path(path)} is not an MCP endpoint of this server{hint}"
        f" (its endpoints: {', '.join(endpoint_paths(app))})"
    )


def bad_param(app: App, path: str) -> str | None:
    """Why ``path``'s path parameter (chess's ``<table>``) names nothing, or None: a name is
    1 to 40 letters, digits, ``_``, ``-`` or ``.``; a seat token typed after ``&`` or ``/``
    instead of ``?`` is refused here, never shown (`shown_path`), rather than served as a name."""
    parts = [p for p in path.partition("?")[0].split("/") if p]
    toolset = app.toolsets.get(parts[1]) if len(parts) == 3 else None
    if toolset is None or not toolset.endpoint_param or _NAME.fullmatch(parts[2]):
        return None
    param = toolset.endpoint_param
    return (
        f"{shown_path(path)} names no {param}: a {param}'s name is 1 to 40 letters, digits, _,"
        f" - or . (a token goes in the query: /mcp/{toolset.name}/<{param}>?token=…)"
    )
