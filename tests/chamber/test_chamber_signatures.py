"""Signatures a reader can check: trusted keys only, a signed evidence status, published keys.

A valid signature by a key the reader does not trust verifies as "key NOT trusted" and
fails; the evidence status and key id sit inside the signed part; the server lists every
key that signed its cards at ``/chamber/keys``; cards signed before keep verifying.
"""

from __future__ import annotations

import http.server
import json
import threading
from typing import TYPE_CHECKING

import pytest
from harness import Session, signed_before_the_scheme

from agora.toolsets.chamber import cards, cards_cli, verify
from agora.toolsets.chamber.signing import signer_from_bytes

if TYPE_CHECKING:
    from pathlib import Path

OPERATOR = signer_from_bytes(b"42" * 32)
STRANGER = signer_from_bytes(b"17" * 32)


def signed_document(signer=OPERATOR, seed: str = "sig") -> dict:
    s = Session(seed=seed)
    outcome = s.seal(signer=signer)
    return json.loads(cards.publish(outcome.card.body, outcome.card.signature))


def cli_verify(tmp_path: Path, document: dict, **trust) -> tuple[int, list[str]]:
    path = tmp_path / "card.json"
    path.write_text(json.dumps(document))
    out: list[str] = []
    return cards_cli.cmd_verify(path, out=out.append, err=out.append, **trust), out


def test_a_card_re_signed_with_a_fresh_key_is_not_trusted(tmp_path):
    document = signed_document()
    forged = json.loads(json.dumps(document))
    forged["card"]["outcome"] = "solved"
    body = cards.canonical(forged["card"])
    forged["card_sha256"] = cards.sha256_tag(body)
    forged["signature"] = cards.signature_block(STRANGER, body, Session().wall)
    status, out = cli_verify(tmp_path, forged, trusted_keys=[OPERATOR.public_key_hex])
    assert status == 1
    assert out[2].startswith(f"  valid signature, key NOT trusted ({STRANGER.key_id})")
    status, out = cli_verify(tmp_path, forged)  # no trust given at all: never a pass
    assert status == 1
    assert "key NOT trusted" in out[2]
    assert cli_verify(tmp_path, document, trusted_keys=[OPERATOR.public_key_hex])[0] == 0


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda d: d.update(evidence_status="quarantined"), id="status"),
        pytest.param(lambda d: d["signature"].update(evidence_status="x"), id="signed-status"),
        pytest.param(lambda d: d["signature"].update(signed_at="2020-01-01T00:00:00Z"), id="at"),
        pytest.param(lambda d: d["signature"].update(scheme="other/1"), id="scheme"),
        pytest.param(lambda d: d["signature"].update(key_id="ed25519:" + "0" * 16), id="key"),
    ],
)
def test_the_signed_part_cannot_be_edited(tmp_path, edit):
    document = signed_document()
    edit(document)
    result = verify.verify_document(json.dumps(document).encode(), [OPERATOR.public_key_hex])
    assert result.signature == "invalid"
    assert not result.ok
    assert cli_verify(tmp_path, document, trusted_keys=[OPERATOR.public_key_hex])[0] == 1


def test_the_signature_names_its_key_and_status_inside_the_signed_part():
    document = signed_document()
    sig = document["signature"]
    assert (sig["key_id"], sig["evidence_status"], sig["scheme"]) == (
        OPERATOR.key_id,
        "signed",
        cards.SCHEME,
    )
    result = verify.verify_document(json.dumps(document).encode(), [OPERATOR.public_key_hex])
    assert result.ok
    assert result.status_signed


def test_cards_signed_before_the_scheme_still_verify(tmp_path):
    document = signed_before_the_scheme(OPERATOR)
    result = verify.verify_document(json.dumps(document).encode(), [OPERATOR.public_key_hex])
    assert (result.ok, result.status_signed) == (True, False)
    status, out = cli_verify(tmp_path, document, trusted_keys=[OPERATOR.public_key_hex])
    assert status == 0
    assert "the body alone is covered" in out[3]
    assert out[-1] == "VERDICT: genuine"


def test_trust_comes_from_a_file_of_keys_or_a_key_document(tmp_path):
    document = signed_document()
    lines = tmp_path / "trusted.txt"
    lines.write_text(f"# the operator\n{OPERATOR.public_key_hex}\n\n")
    assert cli_verify(tmp_path, document, trust_files=[str(lines)])[0] == 0
    keys = tmp_path / "keys.json"
    listed = {"key_id": OPERATOR.key_id, "public_key": OPERATOR.public_key_hex}
    keys.write_text(json.dumps({"keys": [listed]}))
    assert cli_verify(tmp_path, document, trust_files=[str(keys)])[0] == 0
    keys.write_text(json.dumps({"keys": [{"key_id": STRANGER.key_id}]}))
    assert cli_verify(tmp_path, document, trust_files=[str(keys)])[0] == 2
    status, out = cli_verify(tmp_path, document, trust_files=[str(tmp_path / "absent")])
    assert status == 2
    assert out[0].startswith("cannot verify")
    status, out = cli_verify(tmp_path, document, keys_urls=["file:///etc/passwd"])
    assert status == 2


async def test_the_server_lists_every_key_that_signed_its_cards(agent, chamber, runtime, options,
                                                               tmp_path):  # fmt: skip
    _, service = chamber
    assert (await service.public_keys(runtime))["keys"] == []
    first = tmp_path / "first.key"
    first.write_text("42" * 32)
    options["chamber"]["signing_key"] = str(first)
    listed = (await service.public_keys(runtime))["keys"]
    assert [(k["key_id"], k["current"]) for k in listed] == [(OPERATOR.key_id, True)]
    h = (await agent.enter())["attempt_handle"]
    await agent.tool("seal_attempt", challenge_handle=h)
    # The operator rotates keys: cards signed with the old one stay checkable.
    second = tmp_path / "second.key"
    second.write_text("17" * 32)
    options["chamber"]["signing_key"] = str(second)
    keys = await service.public_keys(runtime)
    assert keys["scheme"] == cards.SCHEME
    assert {k["key_id"]: k["current"] for k in keys["keys"]} == {
        OPERATOR.key_id: False,
        STRANGER.key_id: True,
    }
    assert {k["key_id"]: k["public_key"] for k in keys["keys"]} == {
        OPERATOR.key_id: OPERATOR.public_key_hex,
        STRANGER.key_id: STRANGER.public_key_hex,
    }


def test_a_card_verifies_from_its_page_url(tmp_path):
    signed = signed_document()
    document = json.dumps(signed).encode()
    card_id = signed["card"]["card_id"]
    asked: list[str] = []

    class Cards(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            # Any /cards/ path gets the one card: the reader must notice which one it got.
            found = self.path.startswith("/cards/")
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(document if found else b'{"error": "no such card"}')

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Cards)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        out: list[str] = []
        url = f"{base}/cards/{card_id}?format=html"  # as copied from the address bar
        assert (
            cards_cli.cmd_verify(url, trusted_keys=[OPERATOR.public_key_hex], out=out.append) == 0
        )
        assert asked == [f"/cards/{card_id}?format=json"]
        assert out[2:] == [
            f"  valid signature, trusted key {OPERATOR.key_id} via --trust",
            "VERDICT: genuine",
        ]
        out.clear()
        # Another card's address answered with this (genuinely signed) card: not verified.
        other = f"{base}/cards/card-20261201-0000000000000000"
        assert (
            cards_cli.cmd_verify(other, trusted_keys=[OPERATOR.public_key_hex], out=out.append) == 1
        )
        assert out[-2:] == [
            "  NOT the card the URL names (card-20261201-0000000000000000): the server"
            " answered with another one",
            "VERDICT: NOT genuine: not the card the URL names (card-20261201-0000000000000000)",
        ]
        out.clear()
        # Dot segments: "/cards/X/." is X's URL to a browser, not to every server.
        asked.clear()
        odd = (
            f"{other}/.",
            f"{other}/%2E",
            f"{base}/cards/./{card_id}/..",
            f"{base}/cards/%2F{card_id}",  # an encoded slash: a card name to one, not another
            f"{base}/cards/a%2F{card_id}",
            f"{base}/cards//{card_id}",
            f"{other}%2F..",
        )
        for url in odd:
            assert (
                cards_cli.cmd_verify(url, trusted_keys=[OPERATOR.public_key_hex], err=out.append)
                == 2
            )
            assert len(out) == 1
            assert out[0].startswith(f"cannot verify: {url}: give the card's URL as the server")
            out.clear()
        assert asked == []  # refused before anything was fetched
        assert cards_cli.cmd_verify(f"{base}/elsewhere/card-2", err=out.append) == 2
        missing = f"cannot verify: cannot fetch {base}/elsewhere/card-2: HTTP Error 404: Not Found"
        assert out == [missing]
    finally:
        server.shutdown()
        server.server_close()


def test_a_file_that_is_not_there_is_not_called_a_bad_card(tmp_path):
    """Newcomer finding: ``agora cards verify missing.json`` said "not a card document
    ([Errno 2] No such file or directory ...)"."""
    missing, out = tmp_path / "missing.json", []
    assert cards_cli.cmd_verify(missing, err=out.append) == 2
    assert out == [f"cannot verify: cannot read {missing}: No such file or directory"]
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not json")
    out.clear()
    assert cards_cli.cmd_verify(garbage, err=out.append) == 2
    assert out[0].startswith(f"{garbage}: not a card document (")


@pytest.mark.parametrize(
    ("where", "key"),
    [("document", "note"), ("signature", "verified_by")],
)
def test_a_field_added_beside_the_card_fails_verification(tmp_path, where, key):
    # {"note": "trusted by ScoreIA"} beside a genuine card verified with exit 0 and no word:
    # neither the hash nor the signature covers it, and a reader may take it for the card's.
    document = signed_document()
    (document if where == "document" else document["signature"])[key] = "trusted by ScoreIA"
    status, out = cli_verify(tmp_path, document, trusted_keys=[OPERATOR.public_key_hex])
    assert status == 1
    shown = key if where == "document" else f"signature.{key}"
    assert out[3] == (
        f"  NOT covered by hash or signature: {shown} (added beside the card: nothing vouches"
        " for it)"
    )
    assert out[2] == f"  valid signature, trusted key {OPERATOR.key_id} via --trust"  # the card is


def test_a_trusted_key_in_upper_case_is_trusted(tmp_path):
    # It passed the key check, then matched nothing: the operator's genuine card read as
    # "key NOT trusted". The same from a trust file.
    document = signed_document()
    upper = OPERATOR.public_key_hex.upper()
    assert cli_verify(tmp_path, document, trusted_keys=[upper])[0] == 0
    listed = tmp_path / "trusted.txt"
    listed.write_text(upper + "\n")
    assert cli_verify(tmp_path, document, trust_files=[str(listed)])[0] == 0


def test_a_key_id_is_a_label_and_trusts_nothing(tmp_path):
    """A sceptical reader's finding: trust went by the 64-bit key id too (``--trust ID``, and
    every key id a key document listed), so a key that merely shares an id would pass."""
    document = signed_document()
    wire = json.dumps(document).encode()
    assert not verify.verify_document(wire, [OPERATOR.key_id]).trusted
    # A key document pairing the operator's key id with another public key trusts neither
    # (the entry was edited, and is named): the operator's card is not trusted through the id.
    keys = tmp_path / "keys.json"
    keys.write_text(
        json.dumps({"keys": [{"key_id": OPERATOR.key_id, "public_key": STRANGER.public_key_hex}]})
    )
    status, out = cli_verify(tmp_path, document, trust_files=[str(keys)])
    assert status == 1
    assert out[0].startswith(f"warning: {keys}: the entry of key_id {OPERATOR.key_id} is not")
    assert "key NOT trusted" in out[3]
    # --trust, or a trust file, given a key id: refused in words, not silently weaker.
    for trust in ({"trusted_keys": [OPERATOR.key_id]}, {"trust_files": [str(keys)]}):
        if "trust_files" in trust:
            keys.write_text(OPERATOR.key_id + "\n")
        status, out = cli_verify(tmp_path, document, **trust)
        assert status == 2
        assert out[0].endswith(
            f"{OPERATOR.key_id!r} is a key id, a label that cannot identify a key: give the key"
            " itself, its public key as 64 hex digits (as the server's /chamber/keys lists it)"
        ), out


def test_a_card_signed_by_another_key_under_the_trusted_key_id_is_not_trusted(tmp_path):
    # The forger signs the statement naming the operator's key id with a key of their own.
    forged = signed_document()
    forged["card"]["outcome"] = "solved"
    body = cards.canonical(forged["card"])
    forged["card_sha256"] = cards.sha256_tag(body)
    sig = forged["signature"]
    statement = cards.statement(forged["card_sha256"], OPERATOR.key_id, sig["signed_at"])
    sig.update(key_id=OPERATOR.key_id, public_key=STRANGER.public_key_hex)
    sig["value"] = STRANGER.sign(statement)
    result = verify.verify_document(json.dumps(forged).encode(), [OPERATOR.public_key_hex])
    assert (result.trusted, result.ok) == (False, False)
    status, out = cli_verify(tmp_path, forged, trusted_keys=[OPERATOR.public_key_hex])
    assert status == 1
    assert "trusted key" not in "\n".join(out)
