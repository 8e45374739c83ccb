"""Generated rooms stay byte for byte what they were: digests recorded from the code.

Published evidence cards and room ids rest on generation being a pure function of suite and
seed, so a change to the templates or their loading must not move one character of any room.
For each suite, 200 seeds (server-drawn forms: 16 hex digits as an entry draws, 32 as an
ally's invitation draws; participant-chosen forms: any string up to 64 characters) are
generated and each room's whole content (every field down to the lock specs' theme words,
and every text the room can ever print) is hashed and compared with the digest recorded in
``fixtures/room_digests.json``. The template data is hashed too, whole, so a change to a word
no room happened to draw is caught as well.

A deliberate change to generation records new digests: ``python
tests/chamber/test_chamber_room_digests.py`` rewrites the fixture (and the cards already
published then name rooms that no longer exist: say so in the commit).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agora.toolsets.chamber import room as rooms
from agora.toolsets.chamber.contract import default_contract
from agora.toolsets.chamber.generate import TEMPLATES, build_room

FIXTURE = Path(__file__).parent / "fixtures" / "room_digests.json"
SUITES = [(s.id, s.engine) for s in default_contract().suites]
PER_FORM = 100


def plain(value: Any) -> Any:
    """``value`` as JSON data: dataclasses as field lists (private fields left out)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    if isinstance(value, Mapping):
        return [[plain(k), plain(v)] for k, v in sorted(value.items())]
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    assert value is None or isinstance(value, str | int | float), type(value)
    return value


def digest(data: Any) -> str:
    blob = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def room_digest(suite: str, engine: str, seed: str) -> str:
    # Unwrapped: a fresh build, never a room another test left in the cache.
    room = build_room.__wrapped__(suite, engine, seed)
    return digest({"room": plain(room), "texts": rooms.every_text(room)})


def server_seeds() -> list[str]:
    """Seeds of the shapes the server draws: ``token_hex(8)`` (entries), ``token_hex(16)``."""
    hexes = [hashlib.sha256(f"server-{i}".encode()).hexdigest() for i in range(PER_FORM)]
    return [h[:16] if i % 4 else h[:32] for i, h in enumerate(hexes)]


def participant_seeds() -> list[str]:
    """Seeds a participant may choose: any string of at most 64 characters."""
    shapes = (
        lambda i: f"seed-{i}",
        lambda i: str(i),
        lambda i: f"Mon essai n°{i} — été",
        lambda i: f"  spaced {i}\tand tabbed  ",
        lambda i: ("x" * 60 + f"{i:04d}")[:64],
        lambda i: f"日本語{i}🔑",
        lambda i: f"{i}" * (1 + i % 7),
        lambda i: json.dumps({"seed": i}),
    )
    return [shapes[i % len(shapes)](i) for i in range(PER_FORM)]


def templates_digest() -> dict[str, str]:
    return {engine: digest(plain(templates)) for engine, templates in sorted(TEMPLATES.items())}


def current() -> dict[str, Any]:
    """What the code generates now, in the fixture's shape."""
    suites = {
        suite: {seed: room_digest(suite, engine, seed)[:16] for seed in seeds}
        for suite, engine in SUITES
        for seeds in [server_seeds() + participant_seeds()]
    }
    return {"templates": templates_digest(), "rooms": suites}


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_seeds_cover_both_forms_and_are_distinct():
    seeds = server_seeds() + participant_seeds()
    assert len(set(seeds)) == len(seeds) == 2 * PER_FORM
    assert all(1 <= len(s) <= 64 for s in seeds)
    assert {len(s) for s in server_seeds()} == {16, 32}


def test_template_data_is_what_was_recorded(recorded):
    assert templates_digest() == recorded["templates"]


@pytest.mark.parametrize(("suite", "engine"), SUITES)
def test_every_recorded_room_is_generated_byte_for_byte(recorded, suite, engine):
    want = recorded["rooms"][suite]
    assert list(want) == server_seeds() + participant_seeds()
    changed = [s for s, d in want.items() if room_digest(suite, engine, s)[:16] != d]
    assert changed == []


def test_the_digest_sees_one_character_of_template_text(monkeypatch):
    suite, engine = SUITES[0]
    seed = server_seeds()[1]
    before = room_digest(suite, engine, seed)
    template = build_room.__wrapped__(suite, engine, seed).template
    index, chosen = next((i, t) for i, t in enumerate(TEMPLATES[engine]) if t.id == template)
    edited = dataclasses.replace(chosen, intro=chosen.intro[:-1] + "!")
    changed = (*TEMPLATES[engine][:index], edited, *TEMPLATES[engine][index + 1 :])
    monkeypatch.setitem(TEMPLATES, engine, changed)
    assert room_digest(suite, engine, seed) != before


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(current(), ensure_ascii=False, indent=1) + "\n", "utf-8")
