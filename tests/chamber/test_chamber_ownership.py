"""Who may use an attempt: a named principal's attempt is theirs alone, with no existence oracle.

An attempt entered by a named principal answers every other caller (anonymous, another
principal, even an operator) byte for byte as a handle that was never issued does. Anonymous
attempts stay capabilities: whoever holds the handle may use them. Public pages and listings
never show a handle.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from chamber_agent import ENTRY, Agent

from agora.toolsets.base import Principal

MISSING = "chl-" + "0" * 16
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("observe_chamber", {"object": "workbench"}),
    ("chamber_action", {"op": "look"}),
    ("chamber_action", {"op": "look", "expected_action_index": 0}),
    ("challenge_action", {"op": "hint"}),
    ("call_for_help", {"ally": "grok-4.6"}),
    ("seal_attempt", {}),
    ("seal_attempt", {"include_export_bundle": True}),
    ("finish_challenge", {}),
]


def as_bytes(body: dict[str, Any], handle: str) -> bytes:
    """The refusal as the client reads it, with the handle it echoes normalised."""
    return json.dumps(body, sort_keys=True).replace(handle, "chl-HANDLE").encode()


def agents(runtime: Any, chamber: Any) -> dict[str, Agent]:
    handlers = dict(chamber[0].handlers)
    return {
        "alice": Agent(runtime, handlers, Principal("alice")),
        "bob": Agent(runtime, handlers, Principal("bob")),
        "ops": Agent(runtime, handlers, Principal("ops", frozenset({"operator"}))),
        "anonymous": Agent(runtime, handlers),
    }


async def refusals(agent: Agent, handle: str) -> list[bytes]:
    out = []
    for name, args in CALLS:
        body = await agent.refused(name, challenge_handle=handle, **args)
        out.append(as_bytes(body, handle))
    return out


@pytest.mark.parametrize("stranger", ["bob", "ops", "anonymous"])
async def test_a_named_attempt_answers_strangers_exactly_as_a_missing_one(
    runtime, chamber, stranger
):
    who = agents(runtime, chamber)
    handle = (await who["alice"].enter(seed="mine"))["attempt_handle"]
    missing = await refusals(who[stranger], MISSING)
    assert await refusals(who[stranger], handle) == missing
    assert all(b'"code": "attempt_not_found"' in b for b in missing)
    # Nothing the strangers did reached the attempt: its owner finds it untouched.
    look = await who["alice"].tool("chamber_action", challenge_handle=handle, op="look")
    assert look["action_index"] == 1
    sealed = await who["alice"].tool("seal_attempt", challenge_handle=handle)
    assert sealed["already_sealed"] is False
    assert sealed["card"]["allies"] == []


async def test_a_sealed_named_attempt_gives_strangers_no_card(runtime, chamber):
    who = agents(runtime, chamber)
    handle = (await who["alice"].enter())["attempt_handle"]
    await who["alice"].tool("seal_attempt", challenge_handle=handle)
    assert await refusals(who["bob"], handle) == await refusals(who["bob"], MISSING)


async def test_a_summoned_attempt_is_the_operators_alone(runtime, chamber):
    who = agents(runtime, chamber)
    entered = await who["ops"].enter(origin="summoned")
    handle = entered["attempt_handle"]
    for stranger in ("anonymous", "bob"):
        assert await refusals(who[stranger], handle) == await refusals(who[stranger], MISSING)
    sealed = await who["ops"].tool("seal_attempt", challenge_handle=handle)
    assert sealed["card"]["identity"]["assurance"] == "scoreia_controlled"


async def test_an_anonymous_attempt_is_a_capability_of_its_handle(runtime, chamber):
    who = agents(runtime, chamber)
    handle = (await who["anonymous"].tool("enter_open_challenge", **ENTRY))["attempt_handle"]
    await who["bob"].tool("chamber_action", challenge_handle=handle, op="look")
    look = await who["alice"].tool("chamber_action", challenge_handle=handle, op="look")
    assert look["action_index"] == 2


async def test_public_documents_never_show_a_handle(runtime, chamber):
    from agora.toolsets.chamber import listings, store

    who = agents(runtime, chamber)
    handle = (await who["alice"].enter())["attempt_handle"]
    sealed = await who["alice"].tool("seal_attempt", challenge_handle=handle)
    card_id = sealed["card_id"]
    document = await runtime.read(lambda conn: store.card_document(conn, card_id))
    listing = await runtime.read(lambda conn: listings.list_cards(conn, sealed["card"]["date"]))
    assert handle not in document.decode()
    assert handle[4:] not in document.decode()
    assert handle not in json.dumps(listing)


async def test_a_stranger_is_refused_after_a_store_read_as_for_a_missing_handle(
    runtime, chamber, monkeypatch
):
    # Equal bytes are not enough: a refusal answered from memory came back measurably sooner
    # than a made-up handle's, whose lookup reads the store. Both now read it once.
    who = agents(runtime, chamber)
    handle = (await who["alice"].enter())["attempt_handle"]
    await who["alice"].tool("chamber_action", challenge_handle=handle, op="look")
    kind = chamber[1].kind
    assert runtime.holds(kind, handle)
    assert not runtime.holds(kind, MISSING)
    reads: list[str] = []

    def spy(name: str) -> None:  # a guarded store (PostgreSQL) loads with read_versioned
        real = getattr(runtime.store, name)

        async def counted(*args, **kwargs):
            reads.append(name)
            return await real(*args, **kwargs)

        monkeypatch.setattr(runtime.store, name, counted)

    for name in ("read", "read_versioned"):
        if hasattr(runtime.store, name):
            spy(name)

    async def reads_of(handle: str) -> list[int]:
        per_call = []
        for name, args in CALLS:
            before = len(reads)
            await who["bob"].refused(name, challenge_handle=handle, **args)
            per_call.append(len(reads) - before)
        return per_call

    missing = await reads_of(MISSING)
    assert all(n >= 1 for n in missing)  # one on SQLite; PostgreSQL also reads versions
    assert await reads_of(handle) == missing
    assert runtime.holds(kind, handle)  # still in memory: the read was of another handle
