"""The settings a server would start with and then fail on: refused at start, saying why.

`agora.config.load_config` and `agora.config.config_problem` (for a `Config` built in code)
ask these of every configuration: a public URL no link can use, a principal whose token or
scope cannot work, a project grant no topic can carry, and an ``allowed_hosts`` entry that
no Host header can match. Each returns why, in the operator's words, or None. No I/O.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from agora.identity import ANONYMOUS, SCOPES
from agora.logsafe import loggable

if TYPE_CHECKING:
    from agora.config import Config, PrincipalConfig

#: A token_sha256 as sha256sum prints it (without its trailing "  -").
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
#: The sha256 of no token at all: what ``printf %s "$TOKEN" | sha256sum`` prints with $TOKEN
#: unset or empty. No request can send it (an empty bearer token is refused 401).
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def unusable_url(url: str) -> str | None:
    """Why ``url`` cannot be the base of the links the server hands out, or None.

    The links (chess pages, agent endpoints, evidence cards) are the base plus a path, and
    browsers and MCP clients follow only http(s) URLs with a host: ``example.com`` or
    ``ftp://x`` would make every link a dead one, without a word at start. Empty: the
    default (http://host:port).
    """
    if not url:
        return None
    # The scheme as written, not urlsplit's lower-cased one: the banner and the WebSocket
    # links swap a leading "http" for "ws".
    try:
        if url.startswith(("http://", "https://")) and urlsplit(url).hostname:
            return None
    except ValueError:  # urlsplit's own refusal ("http://[::1": an unclosed IPv6 address)
        pass
    return (
        "public_url must be an http:// or https:// URL with a host, such as"
        f" https://agora.example.com, not {loggable(url, 80)!r}"
    )


def unusable_principal(config: Config) -> tuple[str, str] | None:
    """The first ``[[principals]]`` entry that cannot work as written: ("principals", why).

    A token_sha256 that is not a digest (the token itself, the README's placeholder) would
    answer its owner 401 on every call; a misspelt scope would refuse its tools; a second
    principal with the same digest would never be reached; a principal named anonymous
    would pass for a caller that sent no token, and one with an empty name would sign its
    results and records with none; and the digest of the empty token (``$TOKEN`` unset when
    it was computed) matches no request.
    """
    owners: dict[str, str] = {}
    for i, p in enumerate(config.principals):
        which = f"principal {p.name!r} (principals[{i}])"
        if not p.name.strip():
            return "principals", (
                f"{which}: name is empty; each principal needs a name (its results and records"
                " say who called)"
            )
        if p.name == ANONYMOUS:
            return "principals", f"{which}: {ANONYMOUS} is the name of callers without a token"
        if not _SHA256_HEX.fullmatch(p.token_sha256):
            return "principals", (
                f"{which}: token_sha256 must be 64 hex digits, the sha256 of the token"
                ' (printf %s "$TOKEN" | sha256sum), not the token itself'
                + (
                    "; leave out the '  -' that sha256sum prints after the digits"
                    if _SHA256_HEX.fullmatch(p.token_sha256.split(" ")[0])
                    else ""
                )
            )
        if p.token_sha256.lower() == _EMPTY_SHA256:
            return "principals", (
                f"{which}: token_sha256 is the sha256 of an empty token, which no request can"
                ' send (was $TOKEN set when you ran printf %s "$TOKEN" | sha256sum?)'
            )
        for scope in p.scopes:
            if scope not in SCOPES:
                known = ", ".join(SCOPES)
                return "principals", f"{which}: unknown scope {scope!r}; known: {known}"
        first = owners.setdefault(p.token_sha256.lower(), p.name)
        if first != p.name:
            return "principals", (
                f"principals {first!r} and {p.name!r} have the same token_sha256; each"
                " principal needs a token of its own"
            )
    return None


#: A project a grant names (the debate's ``PROJECT_RE``: a test keeps the two equal).
PROJECT_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
#: A host name as a Host header carries it (the transports' own check), or an IPv6 address
#: in brackets.
_HOST_NAME = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]{0,252})$")


def unusable_grants(config: Config) -> tuple[str, str] | None:
    """What callers are granted that could never work: a project no topic can carry
    (``principals[i].projects``, ``anonymous_projects``), ``allow_anonymous = false`` with
    no principal to call, or principals of one name that differ in what they may do: (the
    setting, why). Each would start, and then refuse its holder on every call."""
    granted = [
        (f"the projects of principal {p.name!r}", "principals", p.projects)
        for p in config.principals
    ]
    granted.append(("anonymous_projects", "anonymous_projects", config.anonymous_projects or []))
    for which, setting, projects in granted:
        for project in projects:
            if not PROJECT_NAME.fullmatch(project):
                return setting, (
                    f"{which}: {project!r} is not a project name (lower-case letters, digits"
                    " and . _ -, starting with a letter or digit, at most 64 characters:"
                    f" {PROJECT_NAME.pattern})"
                )
    if not config.allow_anonymous and not config.principals:
        return "allow_anonymous", (
            "allow_anonymous = false needs [[principals]]: with no bearer token to send, no"
            " client could use the MCP endpoints"
        )
    seen: dict[str, PrincipalConfig] = {}
    for p in config.principals:
        first = seen.setdefault(p.name, p)
        if (sorted(first.scopes), sorted(first.projects)) != (sorted(p.scopes), sorted(p.projects)):
            return "principals", (
                f"two principals are named {p.name!r} with different scopes or projects: one"
                " name is one caller, whichever of its tokens it sends (two tokens of one"
                " principal, while one replaces the other, need the same scopes and projects)"
            )
    return None


def _unusable_host(entry: str) -> str | None:
    """Why ``entry`` of ``allowed_hosts`` could never match a request's Host, or None."""
    said = f"allowed_hosts entry {entry!r}"
    if not entry:
        return "allowed_hosts has an empty entry"
    if "://" in entry:
        try:
            name = urlsplit(entry).hostname
        except ValueError:  # urlsplit's own refusal ("http://[::1": an unclosed address)
            name = None
        return f"{said} is a URL: list the host name alone" + (f" ({name!r})" if name else "")
    if "*" in entry:
        return f"{said}: wildcards are not supported; list each host name"
    if _HOST_NAME.fullmatch(entry):
        return None
    name, _, port = entry.rpartition(":")
    if port.isdigit() and _HOST_NAME.fullmatch(name):
        return f"{said} has a port: list {name!r} alone (a listed name is accepted on any port)"
    if entry.count(":") > 1:
        return f"{said}: write an IPv6 address in brackets, as a Host header does: '[{entry}]'"
    return f"{said} is not a host name (letters, digits, dots and hyphens)"


def unusable_address(config: Config) -> tuple[str, str] | None:
    """The first of ``public_url`` and ``allowed_hosts``' entries no request or link could
    use: (the setting, why)."""
    if (url := unusable_url(config.public_url)) is not None:
        return "public_url", url
    for entry in config.allowed_hosts:
        if (why := _unusable_host(entry)) is not None:
            return "allowed_hosts", why
    return None
