"""The server's start page (``GET /``): what this server runs and where a person or a client
begins.

A person who types the server's address, or follows the link of a 404 or 500 page, gets an
HTML page: each enabled toolset with its MCP endpoint and the pages it lists as places to start
(`agora.toolsets.base.Toolset.pages`), then the probes. A client asking for JSON (``Accept`` or
``?format=json``: `agora.web.http.wants_html`) gets the same as data. Nothing on it is secret:
no token, no table or attempt is named.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from agora.web.http import PAGE_HEADERS, PAGE_STYLE, VIEWPORT, Response

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.toolsets.base import Toolset

__all__ = ["PATH", "PROBES", "start_page"]

#: Where the start page is served; the refusal pages link to it.
PATH = "/"

#: What a request other than GET or HEAD to the start page is told (405): it is most likely
#: an MCP client given the server's address instead of its endpoint.
MCP_HINT = " (this is the start page: MCP clients connect to /mcp, or /mcp/<toolset>)"

#: The health probes, as listed here and served by the HTTP transport.
PROBES = (
    ("/healthz", "Liveness, and the store's and writer's counters"),
    ("/readyz", "Readiness: 200 while the server takes calls"),
)

#: How an agent reaches ``/mcp``: both network transports on the one path (stdio has none).
_MCP_NOTE = "Streamable HTTP (POST/GET) and WebSocket (Upgrade) on the same path"


def start_document(toolsets: Iterable[Toolset], base: str = "") -> dict[str, Any]:
    """The start page as data: the MCP endpoints and pages of each toolset, and the probes;
    each path under ``base``, the path prefix of ``public_url`` (`agora.web.prefix`)."""
    return {
        "mcp": {"path": f"{base}/mcp", "transports": _MCP_NOTE},
        "toolsets": [
            {
                "name": t.name,
                "mcp": f"{base}/mcp/{t.name}"
                + (f"/<{t.endpoint_param}>" if t.endpoint_param else ""),
                "pages": [{"path": base + path, "title": title} for path, title in t.pages],
            }
            for t in toolsets
        ],
        "probes": [{"path": base + path, "title": title} for path, title in PROBES],
    }


def _links(items: list[dict[str, str]]) -> str:
    return "".join(
        f'<li><a href="{html.escape(i["path"], quote=True)}">{html.escape(i["path"])}</a> '
        f"{html.escape(i['title'])}</li>"
        for i in items
    )


def start_page(toolsets: Iterable[Toolset], as_html: bool, base: str = "") -> Response:
    """``GET /``: HTML when ``as_html``, else JSON (`start_document`)."""
    doc = start_document(toolsets, base)
    if not as_html:
        return Response.json(doc)
    sections = []
    for t in doc["toolsets"]:
        pages = f"<ul>{_links(t['pages'])}</ul>" if t["pages"] else ""
        sections.append(
            f"<h2>{html.escape(t['name'])}</h2><p>MCP endpoint: "
            f"<code>{html.escape(t['mcp'])}</code></p>{pages}"
        )
    text = (
        f"<!doctype html><html lang=en><meta charset=utf-8>{VIEWPORT}<title>agora</title>"
        f"<style>{PAGE_STYLE}</style><body><h1>agora</h1>"
        "<p>An MCP server for long-running agent sessions. Agents connect to "
        f"<code>{html.escape(base)}/mcp</code> (every toolset) or "
        f"<code>{html.escape(base)}/mcp/&lt;toolset&gt;</code>: "
        f"{html.escape(_MCP_NOTE)}.</p>"
        + "".join(sections)
        + f"<h2>Probes</h2><ul>{_links(doc['probes'])}</ul></body></html>"
    )
    response = Response.html(text, 200)
    response.headers.extend(PAGE_HEADERS)
    return response
