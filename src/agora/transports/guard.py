"""Request checks every HTTP route shares: Host/Origin, cross-site state changes, media types.

Pure functions of a request's (lower-cased) headers, no I/O. The front end applies
`origin_allowed` to every request (MCP, WebSocket upgrades, pages, cards, ``/healthz``)
against DNS rebinding, and `cross_site_refusal` to every state-changing page request against
cross-site request forgery; Streamable HTTP applies `mcp_post_refusal` to its POSTs.
`host_refusal` says which name the first check refused and which setting would accept it;
`exposure_warning` is what ``agora serve`` says at start when that check will refuse the
names its clients use.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from agora.logsafe import loggable
from agora.web.http import media_quality

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
#: A Host header: a name, an IPv4 address or a bracketed IPv6 address, and an optional
#: port. Nothing else (no user info, path or spaces) may slip a second name past the check.
_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))(?::\d{1,5})?$")
#: Bind addresses that listen on every interface: clients reach them by other names.
WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
#: Most characters of a refused Host or Origin quoted back in a refusal.
_QUOTED = 100
#: Where an operator allows a name: the setting, as the TOML file and the environment spell it.
_ALLOW = 'allowed_hosts (agora.toml: allowed_hosts = ["{0}"]; environment: AGORA_ALLOWED_HOSTS={0})'
#: Methods that only read.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Sec-Fetch-Site values a state change may carry: the page itself, or typed by a person.
_SAME_SITE = frozenset({"same-origin", "none"})


def host_name(host: str) -> str | None:
    """The name of a Host header (``127.0.0.1:80`` -> ``127.0.0.1``), None if malformed."""
    if not _HOST.match(host):
        return None
    if host.startswith("["):
        return host[: host.index("]") + 1].lower()
    return host.rsplit(":", 1)[0].lower() if ":" in host else host.lower()


def _known(name: str, names: Iterable[str]) -> bool:
    return name in names or f"[{name}]" in names


def origin_allowed(headers: Mapping[str, str], allowed: Iterable[str]) -> bool:
    """DNS-rebinding check: Host (and Origin, if sent) must name this machine or be allowed.

    A request without Host (HTTP/1.0 may leave it out) names no other machine, and is
    taken as one naming this server: a browser, the only client a rebinding attack can
    steer, always sends Host.
    """
    return _names_allowed(headers.get("host"), headers.get("origin"), tuple(allowed))


@lru_cache(maxsize=256)
def _names_allowed(host: str | None, origin: str | None, allowed: tuple[str, ...]) -> bool:
    names = LOOPBACK | {a.lower() for a in allowed}
    if host is not None:
        name = host_name(host)
        if name is None or not _known(name, names):
            return False
    if origin is None:
        return True
    try:
        parts = urlsplit(origin)
        origin_name = parts.hostname or ""
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or "@" in parts.netloc:
        return False
    return _known(origin_name, names)


NO_ENTITY_TAGS = (
    "Precondition Failed: If-Match names an entity tag, and the pages give none out, so none"
    " can match (RFC 9110 13.1.1); send the change without If-Match, or with If-Match: *"
)


def precondition_fails(headers: Mapping[str, str]) -> bool:
    """Whether a state change's ``If-Match`` is false. No page gives out an entity tag, so
    any tag fails; ``*`` holds, every page being there."""
    condition = headers.get("if-match")
    return condition is not None and condition.strip() != "*"


def host_syntax_refusal(host: str | None, version: str) -> str | None:
    """Why a request's Host makes it a bad request (RFC 9112 3.2: 400 for an HTTP/1.1
    request without one, and for any whose Host is not a host[:port]), else None."""
    if host is None:
        return "Bad Request: an HTTP/1.1 request needs a Host header" if version == "1.1" else None
    if host_name(host) is not None:
        return None
    return (
        f'Bad Request: Host "{loggable(host, _QUOTED)}" is not a host name or address'
        " (with an optional :port)"
    )


def host_refusal(headers: Mapping[str, str], allowed: Iterable[str]) -> str:
    """Why `origin_allowed` refused these headers: the Host (or else the Origin) it refused,
    escaped and cut, and the setting that would accept that name.

    The refusal answers a request that reached this machine by a name nobody listed, most
    often a server bound to 0.0.0.0 asked by its address: the operator reads the fix here.
    """
    names = LOOPBACK | {a.lower() for a in allowed}
    host = headers.get("host")  # none (HTTP/1.0): Origin was refused
    which, value = "Host", host or ""
    name = None if host is None else host_name(host)
    if host is None or (name is not None and _known(name, names)):
        which, value = "Origin", headers.get("origin", "")
        try:
            name = urlsplit(value).hostname
        except ValueError:
            name = None
    message = (
        f'Forbidden: {which} "{loggable(value, _QUOTED)}" is not allowed: only loopback names'
        " and those in allowed_hosts are accepted (DNS-rebinding protection)"
    )
    if not name or _known(name, names):  # no name, or a known one in a malformed header
        return message
    return f"{message}; to accept {which} {name}, add it to " + _ALLOW.format(
        loggable(name, _QUOTED)
    )


def exposure_warning(host: str, allowed: Iterable[str], public_url: str) -> str | None:
    """A warning for ``agora serve`` to log at start, or None: the server listens where
    clients will use names the Host/Origin check refuses (bound to every interface with no
    allowed_hosts, or a public_url whose host is not accepted), each refused with 403."""
    names = LOOPBACK | {a.lower() for a in allowed}
    try:
        public = urlsplit(public_url).hostname if public_url else None
    except ValueError:  # not a URL: the links say so themselves
        public = None
    if public and not _known(public, names):
        return (
            f"public_url names {public}, which the Host/Origin check refuses"
            f" (403): only loopback names and allowed_hosts are accepted; add it to "
            + _ALLOW.format(public)
        )
    if host in WILDCARDS and not set(allowed):
        return (
            f"listening on every interface ({host or '*'}), but only requests"
            " whose Host is a loopback name (localhost, 127.0.0.1, [::1]) are accepted; one"
            " naming this machine otherwise gets 403. To accept a name or address clients"
            " use, list it in " + _ALLOW.format("agora.example.com") + ", and set public_url"
            " (AGORA_PUBLIC_URL) to the URL they use, for the links the server prints"
        )
    return None


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def cross_site_refusal(method: str, headers: Mapping[str, str]) -> tuple[int, str] | None:
    """Why a state-changing page request may not run, or None if it may.

    Host and Origin are checked by `origin_allowed` first. Here: the browser's own word
    (``Sec-Fetch-Site``) must be same-origin (else 403), and a body must be JSON (else 415):
    a type a form or a "simple" cross-site request cannot send without a CORS preflight,
    which agora never approves, so this refusal guards against cross-site forgery too.

    Returns:
        ``(status, message)`` when the request must be refused, else None.
    """
    if method in SAFE_METHODS:
        return None
    site = headers.get("sec-fetch-site")
    if site is not None and site.lower() not in _SAME_SITE:
        return 403, f"cross-site request refused (Sec-Fetch-Site: {site})"
    if _media_type(headers.get("content-type", "")) != "application/json":
        return 415, (
            "Unsupported Media Type: state-changing requests need Content-Type: application/json"
        )
    return None


def mcp_post_refusal(headers: Mapping[str, str]) -> tuple[int, str] | None:
    """Streamable HTTP's rules for a POST: a JSON body, and Accept listing JSON and SSE.

    Returns:
        ``(status, message)`` (415 or 406) when the POST must be refused, else None.
    """
    return _post_refusal(headers.get("content-type", ""), headers.get("accept", ""))


@lru_cache(maxsize=256)
def _post_refusal(content_type: str, accept: str) -> tuple[int, str] | None:
    if _media_type(content_type) != "application/json":
        return 415, "Unsupported Media Type: POST needs Content-Type: application/json"
    # Each read by its most specific range: text/event-stream;q=0, */* refuses SSE.
    if not (
        media_quality(accept, "application/json") and media_quality(accept, "text/event-stream")
    ):
        return 406, "Not Acceptable: Accept must list application/json and text/event-stream"
    return None
