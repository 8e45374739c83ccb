"""An MCP endpoint by its path, or a refusal that says which endpoints there are.

``server.client("/mcp/nothere")``, ``serve_stdio`` and ``agora stdio --endpoint`` refused a
path naming no endpoint without saying which exist, where agora's other refusals (a tool, a
toolset, an option) name the closest choice: this one names them all, and the closest.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from agora.logsafe import shown_url

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
        f"{shown_url(path)} is not an MCP endpoint of this server{hint}"
        f" (its endpoints: {', '.join(endpoint_paths(app))})"
    )
