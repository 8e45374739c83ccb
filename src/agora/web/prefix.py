"""A ``public_url`` with a path prefix: the pages served behind a proxy at a sub-path.

An operator who publishes agora as ``https://example.com/agora`` sets that as ``public_url``.
A proxy may forward ``/agora/play/t`` as it is or strip the prefix (nginx's ``location
/agora/ { proxy_pass http://127.0.0.1:8765/; }``): the server takes both (`unprefixed`), and
every page it serves links under the prefix (`prefixed_html`; the pages' scripts read it
from the ``agora-base`` meta tag), so a browser never asks the proxy for a path outside it.
Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
from typing import Final
from urllib.parse import urlsplit

#: A root-absolute link in an HTML attribute (``href="/x"`` or ``href=/x``, not ``//host``).
_LINK: Final = rb'(\s(?:href|src|action)="?)/(?!/'
#: A tag, from ``<`` to the first ``>`` (attribute values are escaped: they hold no ``>``).
_TAG: Final = re.compile(rb"<[a-zA-Z][^>]*>")
#: Where the base goes: after the charset declaration every page opens with.
_CHARSET: Final = b'<meta charset="utf-8">'


@functools.lru_cache(maxsize=8)
def _links(escaped: bytes) -> re.Pattern[bytes]:
    """Root-absolute links not under ``escaped`` already (a page may build them so)."""
    return re.compile(_LINK + b"|" + re.escape(escaped[1:]) + rb'(?:[/"?#\s>]|$))')


def base_path(public_url: str | None) -> str:
    """The path prefix of ``public_url`` without its trailing slash ("" for none)."""
    if not public_url:
        return ""
    return urlsplit(public_url).path.rstrip("/")


def unprefixed(path: str, base: str) -> str:
    """``path`` without the prefix ``base`` if it starts with it (a proxy that forwards the
    prefix), else unchanged (one that strips it, or a client on the server's own address)."""
    if base and (path == base or path.startswith(base + "/")):
        return path[len(base) :] or "/"
    return path


def prefixed_html(body: bytes, base: str) -> bytes:
    """An HTML page whose root-absolute links lead under ``base``, with ``base`` in an
    ``agora-base`` meta tag for its scripts (unchanged when ``base`` is "")."""
    if not base:
        return body
    escaped = base.replace("&", "&amp;").replace('"', "&quot;").encode()
    links = _links(escaped)
    under = rb"\1" + escaped.replace(b"\\", b"\\\\") + b"/"
    # Only in the tags: text (a participant's words on a card, an echoed query) is escaped,
    # so it holds no ``<``, but it may hold ``href=/x``, which must stay as it was written.
    body = _TAG.sub(lambda tag: links.sub(under, tag.group()), body)
    meta = _CHARSET + b'<meta name="agora-base" content="' + escaped + b'">'
    return body.replace(_CHARSET, meta, 1)
