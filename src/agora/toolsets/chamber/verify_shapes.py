"""What ``agora cards verify`` was given when it is not a card: each refusal's words.

A reader hands the checker whatever it saved or copied: a day's listing, a key document, a
card page saved from a browser, some other JSON. Each refusal says what the input is (never
listing the members a card needs as if they had been found) and what to verify instead.
Pure: words only; `verify` raises them as `CardFormatError`.
"""

from __future__ import annotations

import html
import re
from typing import Any, Final

#: What a card document and an export bundle are made of, for a refusal to say.
NEEDS: Final = (
    "a card document is an object of the members card, card_sha256, evidence_status and"
    " signature (as GET /cards/<id>?format=json serves it), an export bundle one of document,"
    " evidence_status, transcript and transcript_retired (a seal's export_bundle)"
)
#: At most this many of an object's member names are quoted in a refusal.
_SHOWN: Final = 6
_JSON_LINK: Final = re.compile(r"/cards/[A-Za-z0-9._-]{1,100}\?format=json")
#: A page's title (agora's pages write it plainly, escaped), and the cards a page links.
_TITLE: Final = re.compile(r"<title>([^<]{0,200})</title>")
_CARD_LINK: Final = re.compile(r"/cards/([A-Za-z0-9._-]{1,100})[\"?]")


def json_kind(value: Any) -> str:
    """The JSON name of ``value``'s type: object, array, string, number, true/false, null."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "true/false"
    return "null" if value is None else "number"


def not_a_card(doc: Any) -> str:
    """Why ``doc`` (parsed JSON) is neither a card document nor an export bundle: what it is,
    and what to verify instead (the caller says "not a card document" before it)."""
    if not isinstance(doc, dict):
        return f"a JSON {json_kind(doc)}: {NEEDS}"
    if isinstance(doc.get("cards"), list):
        return (
            "a card listing, not one card: verify each card's URL (/cards/<card_id>, for each"
            " card_id it lists), one card at a time"
        )
    if isinstance(doc.get("keys"), list):
        return (
            "a key document (/chamber/keys): give it as --trust-file FILE and verify a"
            " card's document"
        )
    if "card" in doc:
        return f"its card member is a JSON {json_kind(doc['card'])}, not an object: {NEEDS}"
    if "document" in doc and not isinstance(doc["document"], dict):
        kind = json_kind(doc["document"])
        return f"its document member is a JSON {kind}, not an object: {NEEDS}"
    names = sorted(doc)
    if not names:
        return f"an empty JSON object: {NEEDS}"
    shown = ", ".join(names[:_SHOWN]) + (", ..." if len(names) > _SHOWN else "")
    return f"a JSON object of the members {shown}: {NEEDS}"


def html_page(data: bytes) -> str:
    """Why an HTML page (a card page saved from a browser) is not a card document, naming the
    JSON address the page links when it has one; a listing's page (a day's cards, the board,
    a board row's cards: any page but a card's) is told to verify each card instead."""
    text = data.decode("utf-8", "replace")
    title = _TITLE.search(text)
    if title is not None and not title.group(1).startswith("ScoreIA Chamber card"):
        count = len(set(_CARD_LINK.findall(text)))
        name = html.unescape(title.group(1))[:80]
        if not count:  # the board: its rows link the pages that list cards
            return (
                f"an HTML page ({name}) that links no card: verify a card's URL (a board row"
                " links its cards' list, each card there links its page)"
            )
        cards = f"{count} card{'s' * (count != 1)}"
        return f"an HTML page ({name}) listing {cards}: verify each card's URL"
    found = _JSON_LINK.search(text)
    where = f" (this page links {found.group()})" if found else ""
    return (
        "an HTML page: verify the card's URL (agora fetches its"
        f" ?format=json form), or the JSON document saved from its ?format=json URL{where}"
    )


def looks_like_html(data: bytes) -> bool:
    """Whether ``data`` opens as markup (``<``, after any byte-order mark and whitespace)."""
    return data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")
