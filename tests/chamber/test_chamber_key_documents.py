"""``agora cards verify --keys-url`` on something that is not a key document says what it wants.

An operator's note: a URL of another JSON document (``/healthz``) gave ``cannot verify: not a
key document: 'keys'``, a KeyError's text.
"""

from __future__ import annotations

import json

import pytest

from agora.toolsets.chamber.signing import key_id
from agora.toolsets.chamber.verify_sources import TrustError, keys_from_json

KEY = {"key_id": key_id("ab" * 32), "public_key": "ab" * 32}


def test_a_key_document_gives_its_public_keys_not_its_key_ids():
    # Trusting the listed key ids too let a card whose key merely shares a 64-bit id pass.
    assert keys_from_json(json.dumps({"keys": [KEY]}).encode()) == ["ab" * 32]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"ok": true, "connections": 3}', 'it has no "keys" list of objects'),
        (b'{"keys": ["k1"]}', 'it has no "keys" list of objects'),
        (b'{"keys": [{"key_id": "ed25519:0123456789abcdef"}]}', 'it has no "keys" list of'),
        (b"<html>", "not JSON"),
    ],
)
def test_anything_else_is_refused_in_words(data, said):
    with pytest.raises(TrustError) as info:
        keys_from_json(data)
    assert str(info.value).startswith("not a key document: "), info.value
    assert said in str(info.value)
    assert "'keys'" not in str(info.value)


def test_an_entry_whose_key_id_is_not_its_keys_is_named_and_not_trusted():
    """Tester finding: a saved key document with another key pasted under the server's key
    id was trusted silently, and a card re-signed with that key verified genuine."""
    swapped = {"key_id": key_id("cd" * 32), "public_key": "ab" * 32}
    warned: list[str] = []
    doc = json.dumps({"keys": [swapped, {"key_id": key_id("ef" * 32), "public_key": "ef" * 32}]})
    assert keys_from_json(doc.encode(), "keys.json: ", warned.append) == ["ef" * 32]
    assert warned == [
        f"keys.json: the entry of key_id {key_id('cd' * 32)} is not trusted: its public_key"
        f" {'ab' * 32} has the key id {key_id('ab' * 32)}, so the document was edited"
    ]
