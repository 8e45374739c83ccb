"""An MCP endpoint by its path, or a refusal that says which endpoints there are.

``server.client("/mcp/nothere")``, ``serve_stdio`` and ``agora stdio --endpoint`` refused a
path naming no endpoint without saying which exist, where agora's other refusals (a tool, a
toolset, an option) name the closest choice: this one names them all, and the closest.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from agora.logsafe import NAME_SEGMENT, shown_url

if TYPE_CHECKING:
    from agora.server.app import App, Endpoint
    from agora.toolsets.base import Toolset

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


def toolset_paths(toolset: Toolset) -> list[str]:
    """``/mcp/<toolset>``, and ``/mcp/<toolset>/<param>`` where it takes one (chess's
    ``<table>``)."""
    paths = [f"/mcp/{toolset.name}"]
    if toolset.endpoint_param:
        paths.append(f"/mcp/{toolset.name}/<{toolset.endpoint_param}>")
    return paths


def endpoint_paths(app: App) -> list[str]:
    """``/mcp``, then each toolset's paths (`toolset_paths`) for the toolsets ``app`` serves."""
    return ["/mcp", *(p for toolset in app.toolsets.values() for p in toolset_paths(toolset))]


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


def bad_param(app: App, path: str) -> str | None:
    """Why ``path``'s path parameter (chess's ``<table>``) names nothing, or None: a name is
    what a chess table's is (1 to 40 lower-case letters, digits, ``_`` or ``-``, starting with
    a letter or a digit); a seat token typed after ``&`` or ``/`` instead of ``?``, or in
    place of the name, is refused here, never shown (`shown_url`), rather than served as one."""
    parts = [p for p in path.partition("?")[0].split("/") if p]
    toolset = app.toolsets.get(parts[1]) if len(parts) == 3 else None
    if toolset is None or not toolset.endpoint_param or NAME_SEGMENT.fullmatch(parts[2]):
        return None
    param = toolset.endpoint_param
    return (
        f"{shown_url(path)} names no {param}: a {param}'s name is 1 to 40 lower-case letters,"
        " digits, _ or -, starting with a letter or a digit (a token goes in the query:"
        f" /mcp/{toolset.name}/<{param}>?token=…)"
    )


def not_the_toolsets(path: str, toolset: Toolset) -> str:
    """That ``agora stdio --toolset NAME --endpoint`` ``path`` is none of ``toolset``'s,
    naming the ones it has (`toolset_paths`) and the one meant when the toolset's name is a
    letter or two off; shown as the log shows paths (`shown_url`)."""
    name = toolset.name
    base, mark, query = path.partition("?")
    parts = [p for p in base.split("/") if p]
    hint = ""
    if (
        len(parts) >= 2
        and parts[1] != name
        and difflib.get_close_matches(parts[1], [name], cutoff=NEAR)
    ):
        meant = "/".join(["", "mcp", name, *parts[2:]]) + mark + query
        hint = f"; did you mean {shown_url(meant)}?"
    served = " and ".join(toolset_paths(toolset))
    return (
        f"--endpoint {shown_url(path)} is not an endpoint of {name}{hint} ({name} serves {served})"
    )
