"""A card page's HTML body: its summary line, banners, links, every field, its integrity.

What ``GET /cards/{card_id}`` shows a browser (`web.card_html` wraps it in a page). Every value
is escaped and isolated (``<bdi>``). What the participant sent (its identity claims, unless an
operator's entry vouches for them, its preflight answers, its allies and ``next_candidate``) is
marked participant-declared next to the value: the server checked its form, never its truth,
and a signature covers the card as written, not what those fields say.
"""

from __future__ import annotations

import html
import json
import re
import urllib.parse
from typing import Any

from agora.toolsets.chamber import verify
from agora.toolsets.chamber.consistency import CONTRADICTORY, contradictions

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: Where a server publishes the keys its cards are signed with.
KEYS_PATH = "/chamber/keys"

#: Card fields holding what the participant sent (besides ``identity``, whose claims are
#: marked one by one): docs/evidence.md, "What a card says".
DECLARED_FIELDS = ("preflight", "allies", "next_candidate")
#: The identity assurance of an entry an operator made (origin summoned): its claims are the
#: operator's, not the participant's.
CONTROLLED = "scoreia_controlled"
#: The mark beside a participant-declared value.
DECLARED = " <small class=declared>(participant-declared: not checked by the server)</small>"
#: Above the field table: what the mark means.
_DECLARED_WORDS = (
    "Values marked participant-declared are what the participant sent (identity claims"
    " unless their assurance is scoreia_controlled, preflight answers, allies,"
    " next_candidate): the server checked their form only, and the signature vouches that"
    " they were sent, not that they are true."
)


def _name(key: object) -> str:
    """A field name that may break after its underscores only (``<wbr>``), never mid-word."""
    return html.escape(str(key)).replace("_", "_<wbr>")


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        rows = "".join(f"<tr><th>{_name(k)}</th><td>{_cell(v)}</td></tr>"
                       for k, v in value.items())  # fmt: skip
        return f"<table>{rows}</table>"
    # <bdi> isolates each value: a right-to-left override in a claim cannot reverse the
    # text around it.
    if isinstance(value, list):
        return ", ".join(f"<bdi>{html.escape(str(v))}</bdi>" for v in value) or "&mdash;"
    if value is None:
        return "&mdash;"
    if not isinstance(value, str):
        # true/false and numbers as the JSON document has them (no text to isolate)
        return f"<code>{html.escape(json.dumps(value))}</code>"
    return f"<code><bdi>{html.escape(value)}</bdi></code>"


#: The border of a card page's banner (contradictory, practice, expired): what a reader must
#: see first.
_BANNER = '<p class={} style="border:2px solid #b60;padding:.4rem .8rem">'


def _practice_note(card: dict[str, Any]) -> str:
    why = verify.practice_reason(card)
    if not why:
        return ""
    room = card.get("room_id")
    link = f" Every run of this room carries room id {_cell(room)}." if room else ""
    return (
        f"{_BANNER.format('practice')}<strong>Practice card</strong>: {why}; it is not"
        f" evidence of a fresh room.{link}</p>"
    )


def _expired_note(card: dict[str, Any]) -> str:
    if card.get("outcome") != "expired":
        return ""
    return (
        f"{_BANNER.format('expired')}<strong>Expired attempt</strong>: it was left unsealed"
        " past its time limit, and the server sealed it when the time ran out; it records the"
        " play up to then, not a finished run.</p>"
    )


def _contradiction_note(card: dict[str, Any], signed: bool) -> str:
    faults = contradictions(card)
    if not faults:
        return ""
    items = "".join(f"<li>{_text(f)}</li>" for f in faults)
    who = (
        "It was signed before the server checked this: the signature does not make it"
        " genuine. The board, which judges unsigned cards only, still counts it"
        if signed
        else "The server never signs such a card, so no key has signed it and none ever will."
        " The board does not count it"
    )
    box = _BANNER.replace("<p ", "<div ").format(CONTRADICTORY)
    return (
        f"{box}<p><strong>Contradictory card</strong>: its figures cannot be true together, so"
        " the attempt's stored figures were changed outside play (its database edited):</p>"
        f"<ul>{items}</ul><p>{who}, and <code>agora cards verify</code> calls it not"
        " genuine.</p></div>"
    )


def _text(value: Any) -> str:
    """A participant's or the card's short value in running text (escaped, isolated)."""
    return f"<bdi>{html.escape(str(value))}</bdi>"


def _summary(card: dict[str, Any], signature: Any) -> str:
    """The line above the field table: product, suite, outcome, when sealed, signed or not
    (what a reader looks for first; the table below holds every field)."""
    identity = card.get("identity")
    if not isinstance(identity, dict):
        identity = {}
    suite = card.get("suite")
    suite_id = suite.get("id") if isinstance(suite, dict) else suite
    parts = [f"<strong>{_text(identity.get('product') or 'unknown product')}</strong>"]
    if suite_id:
        parts.append(f" on {_text(suite_id)}")
    parts.append(f": <strong>{_text(card.get('outcome', 'no outcome'))}</strong>")
    locks = card.get("locks")
    if isinstance(locks, dict):
        opened, total = (html.escape(str(locks.get(k))) for k in ("opened", "total"))
        parts.append(f", {opened} of {total} locks open")
    sealed = str(card.get("sealed_at", ""))
    if len(sealed) >= 19:
        parts.append(f", sealed {html.escape(sealed[:10])} {html.escape(sealed[11:19])} UTC")
    if isinstance(signature, dict):
        parts.append(f"; signed by key {_text(signature.get('key_id'))}")
    elif contradictions(card):
        parts.append(
            f"; <strong>never to be signed</strong>: its figures contradict each other"
            f" ({CONTRADICTORY})"
        )
    else:
        parts.append("; <strong>not signed yet</strong> (pending_signature)")
    return f"<p class=summary>{''.join(parts)}.</p>"


def _card_links(card: dict[str, Any], signed: bool | None = None) -> str:
    """Where a card page leads: the board, its day's listing, its JSON document, the keys
    (saying so when ``signed`` is False: the keys cannot vouch for an unsigned card)."""
    card_id = urllib.parse.quote(str(card.get("card_id", "")), safe="")
    date = card.get("date")
    links = ["<a href=/board>Board</a>"]
    if isinstance(date, str) and _DATE.match(date):
        links.append(f'<a href="/cards?date={date}">Cards of {date}</a>')
    links.append(f'<a href="/cards/{html.escape(card_id)}?format=json">This card as JSON</a>')
    keys = f"<a href={KEYS_PATH}>Signing keys</a>"
    if signed is False and contradictions(card):
        keys += " (no key has signed this card, and none will)"
    elif signed is False:
        keys += " (this card is not signed yet: no key has signed it)"
    links.append(keys)
    return f"<nav><p>{' · '.join(links)}</p></nav>"


#: Under a card's integrity section: how a reader checks it.
_VERIFY_HINT = (
    "<p>Check it yourself: <code>agora cards verify URL --keys-url SERVER/chamber/keys</code>,"
    " where URL is this page's address (or its JSON document saved as a file) and SERVER"
    " the server you trust.</p>"
)


def _identity_cell(identity: dict[str, Any]) -> str:
    """The identity table, each claim marked participant-declared unless an operator's entry
    made it (`CONTROLLED`)."""
    claimed = identity.get("assurance") != CONTROLLED
    rows = "".join(
        f"<tr><th>{_name(k)}</th><td>{_cell(v)}{DECLARED * (claimed and k != 'assurance')}"
        "</td></tr>"
        for k, v in identity.items()
    )
    return f"<table>{rows}</table>"


def _card_table(card: dict[str, Any]) -> str:
    """Every field of the card, what the participant sent marked so next to its value."""
    rows = []
    for key, value in card.items():
        if key == "identity" and isinstance(value, dict):
            cell = _identity_cell(value)
        else:
            cell = _cell(value) + DECLARED * (key in DECLARED_FIELDS and value not in (None, []))
        rows.append(f"<tr><th>{_name(key)}</th><td>{cell}</td></tr>")
    return f"<table>{''.join(rows)}</table>"


def card_view(document: bytes) -> tuple[str, str]:
    """The title and the body of a card document's HTML view (every value escaped)."""
    try:
        doc = json.loads(document)
    except ValueError:
        doc = None
    card = doc.get("card") if isinstance(doc, dict) else None
    if not isinstance(card, dict):
        pretty = html.escape(document.decode("utf-8", "replace"))
        return "ScoreIA Chamber card", f"<h1>ScoreIA Chamber card</h1><pre>{pretty}</pre>"
    title = f"ScoreIA Chamber card {card.get('card_id', '')}"
    status = doc.get("evidence_status") if isinstance(doc, dict) else None
    inner = (
        f"<h1>{html.escape(title)}</h1>{_card_links(card, doc.get('signature') is not None)}"
        f"{_summary(card, doc.get('signature'))}"
        f"{_contradiction_note(card, doc.get('signature') is not None)}"
        f"{_practice_note(card)}{_expired_note(card)}"
        f"<p>Evidence status: {_cell(status)}. {_DECLARED_WORDS}</p>"
        f"{_card_table(card)}<h2>Integrity</h2>"
        f"{_cell({'card_sha256': doc.get('card_sha256'), 'signature': doc.get('signature')})}"
        f"{_VERIFY_HINT}"
    )
    return title, inner
