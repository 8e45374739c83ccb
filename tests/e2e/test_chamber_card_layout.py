"""In a real browser: a card page's field names never break in the middle of a word.

A card's HTML view (`web.card_html`, as ``/cards/<id>`` serves it to a browser) is laid out
in Debian's Chromium at 1200 px and on a 390 px phone. Values (digests, signatures) may break
anywhere to fit the screen; a field name (``card_sha256``, ``evidence_status``) stays whole
on a desktop, and on a phone breaks only after an underscore; the page fits the phone.
"""

from __future__ import annotations

import json

from page_screens import BROWSER, laid_out, width

from agora.toolsets.chamber.web import card_html

pytestmark = BROWSER

#: The field names laid out on more than one line (``wrapped``) and those broken other than
#: after an underscore (``broken``), and the page's width.
BROKEN = """() => {
  const wrapped = [], broken = [];
  for (const th of document.querySelectorAll("th")) {
    const text = th.textContent;
    const tops = [];
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        tops.push(range.getBoundingClientRect().top);
      }
    }
    let lines = 1;
    for (let i = 1; i < tops.length; i++) {
      if (tops[i] === tops[i - 1]) continue;
      lines++;
      if (text[i - 1] !== "_") broken.push(text);
    }
    if (lines > 1) wrapped.push(text);
  }
  return {wrapped, broken, pageWidth: document.documentElement.scrollWidth};
}"""

DIGEST = "sha256:" + "ef5b3a47f06df5fa9b7252a4242656f9c190a2e636d80eb927789d51d99d4b11"


def _document() -> bytes:
    card = {
        "card_id": "card-20261202-05da660af8687cdd", "date": "2026-12-02",
        "identity": {"assurance": "participant_claimed", "model_claim": "rv-model",
                     "product": "a-product-name-of-some-length-4.5-preview",
                     "provider_claim": "rv-provider"},
        "publication_notice": DIGEST, "schema_bundle_hash": DIGEST, "seed_commitment": DIGEST,
        "transcript_hash": DIGEST, "wrong_submissions": 0,
    }  # fmt: skip
    signature = {
        "alg": "Ed25519", "evidence_status": "signed", "key_id": "ed25519:c8111e98759207fa",
        "public_key": "5772eb16f13dc7a33fcf8abc060a1df9e3b3600407e7cea29ebb76b80f8b2fde",
        "scheme": "scoreia-chamber-signed-card/1", "signed_at": "2026-12-02T12:28:08Z",
        "value": "fdN7-cMPOtOe7qFmWa1Iy0U0cAZiqXo6Ts4E6pGd_4nN7GmmficZld4LDhykPN1MQw29844"
                 "dXkr9GzkmjBjMAQ",
    }  # fmt: skip
    doc = {"card": card, "card_sha256": DIGEST, "signature": signature}
    return json.dumps({**doc, "evidence_status": "signed"}).encode()


def test_card_field_names_stay_whole_on_a_desktop_and_a_phone() -> None:
    seen = laid_out(card_html(_document()).body.decode(), BROKEN)
    assert seen["desktop"]["wrapped"] == []
    for name, shown in seen.items():
        assert shown["broken"] == [], name
        assert shown["pageWidth"] <= width(name), name


#: Where the summary line, the banners and the field table start, and the page's width.
PLACES = """() => {
  const top = (selector) => document.querySelector(selector).getBoundingClientRect().top;
  return {summary: top(".summary"), practice: top(".practice"), expired: top(".expired"),
          table: top("table"), pageWidth: document.documentElement.scrollWidth,
          screen: window.innerHeight};
}"""


def test_an_expired_practice_card_leads_with_its_summary_then_its_banners() -> None:
    card = {
        **json.loads(_document())["card"],
        "identity": {"assurance": "participant_claimed", "product": "p" * 79},
        "suite": {"id": "chambre-chrono-v0"}, "outcome": "expired", "sealed_by": "expiry",
        "locks": {"opened": 1, "total": 4}, "sealed_at": "2026-12-02T14:00:00Z",
        "seed_source": "participant", "practice": True, "room_id": DIGEST,
    }  # fmt: skip
    document = json.dumps({"card": card, "card_sha256": DIGEST, "evidence_status":
                           "pending_signature", "signature": None}).encode()  # fmt: skip
    seen = laid_out(card_html(document).body.decode(), PLACES)
    for name, at in seen.items():
        assert at["summary"] < at["practice"] < at["expired"] < at["table"], name
        assert at["summary"] < at["screen"] / 2, name  # read before any scrolling
        assert at["pageWidth"] <= width(name), name


#: Where a contradictory card's summary, its banner and its field table start.
CONTRADICTORY = """() => {
  const top = (selector) => document.querySelector(selector).getBoundingClientRect().top;
  return {summary: top(".summary"), banner: top(".contradictory"), table: top("table"),
          pageWidth: document.documentElement.scrollWidth, screen: window.innerHeight};
}"""


def test_a_contradictory_card_says_why_under_its_summary_on_a_phone_too() -> None:
    card = {
        **json.loads(_document())["card"], "suite": {"id": "chambre-chrono-v0"},
        "outcome": "solved", "locks": {"opened": 4, "total": 3}, "actions_used": 0,
        "hints_used": 0, "transcript_length": 0, "sealed_at": "2026-12-02T14:00:00Z",
    }  # fmt: skip
    document = json.dumps({"card": card, "card_sha256": DIGEST, "evidence_status":
                           "contradictory", "signature": None}).encode()  # fmt: skip
    seen = laid_out(card_html(document).body.decode(), CONTRADICTORY)
    for name, at in seen.items():
        assert at["summary"] < at["banner"] < at["table"], name
        assert at["banner"] < at["screen"] / 2, name  # read before any scrolling
        assert at["pageWidth"] <= width(name), name
