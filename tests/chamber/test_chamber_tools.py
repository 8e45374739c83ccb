"""The chamber tools on a real runtime: envelopes, every error code, aliases, signing, races.

Every structured result and refusal is validated against the contract's outputSchema by
the `Agent` driver (see conftest).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest
import trio
from chamber_agent import ENTRY, START, Agent
from solver import Solver

from agora.errors import ToolError
from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.base import Principal
from agora.toolsets.chamber import build_toolset, cards, cards_cli, listings, store, verify
from agora.toolsets.chamber.contract import contract_from_data, default_contract

KEY_HEX = "5a" * 32


async def solve(agent: Agent, handle: str) -> dict[str, Any]:
    """Run the reference solver through the tools (the solver is sync: it runs in a thread)."""

    def act(op: str, object: str | None = None, value: Any = None) -> dict[str, Any]:
        args: dict[str, Any] = {"challenge_handle": handle, "op": op}
        if object is not None:
            args["object"] = object
        if value is not None:
            args["value"] = value
        return trio.from_thread.run(lambda: agent.tool("chamber_action", **args))

    return await trio.to_thread.run_sync(lambda: Solver(act).run())


async def test_entering_returns_the_room_and_the_publication_notice(agent):
    reply = await agent.enter(seed="door")
    assert reply["ok"] is True
    assert reply["attempt_handle"].startswith("chl-")
    assert len(reply["attempt_handle"]) == 20
    assert reply["attempt_state"] == "created"
    assert reply["suite_id"] == "chambre-chrono-v0"
    assert reply["suite_generation"] == "001"
    assert reply["toolset_id"] == "scoreia-chamber-tools/0.3.0"
    assert reply["remaining_actions"] == 64
    assert reply["action_index"] == 0
    assert reply["expires_at"] == "2026-11-30T14:00:00Z"
    assert set(reply["allowed_next_tools"]) == {"observe_chamber", "chamber_action",
                                                "call_for_help", "seal_attempt"}  # fmt: skip
    assert reply["allowed_ops"][:3] == ["look", "inspect", "hint"]
    notice = default_contract().publication_notice
    assert reply["publication_notice"]["en"] == notice["en"]
    assert reply["publication_notice"]["fr"] == notice["fr"]
    assert reply["objects"]
    assert reply["seed_source"] == "participant"
    other = await agent.enter()
    assert other["seed_source"] == "server"
    assert other["attempt_handle"] != reply["attempt_handle"]


async def test_same_seed_same_room_through_the_tools(agent):
    looks = []
    for _ in range(2):
        h = (await agent.enter(seed="twin", suite="chambre-atelier-v0"))["attempt_handle"]
        looks.append(
            (await agent.tool("chamber_action", challenge_handle=h, op="look"))["observation"]
        )
    assert looks[0] == looks[1]


async def test_a_room_is_solved_and_sealed_through_the_tools(agent):
    with trio.fail_after(30):
        handle = (await agent.enter(seed="through-tools"))["attempt_handle"]
        last = await solve(agent, handle)
        assert last["terminal"]
        assert last["must_seal"]
        assert last["attempt_state"] == "terminal_unsealed"
        sealed = await agent.tool("seal_attempt", challenge_handle=handle)
        assert sealed["outcome"] == "solved"
        assert sealed["already_sealed"] is False
        assert sealed["evidence_status"] == "pending_signature"
        assert sealed["attempt_state"] == "pending_signature"
        again = await agent.tool("finish_challenge", challenge_handle=handle)
        assert again["already_sealed"] is True
        assert again["card_id"] == sealed["card_id"]


async def test_once_the_room_is_over_observing_invites_no_inspect(agent):
    with trio.fail_after(30):
        entered = await agent.enter(seed="over-room")
        handle, objects = entered["attempt_handle"], entered["objects"]
        playing = [
            (await agent.tool("observe_chamber", challenge_handle=handle, object=o))["observation"]
            for o in objects
        ]
        await solve(agent, handle)
        over = [
            (await agent.tool("observe_chamber", challenge_handle=handle, object=o))["observation"]
            for o in objects
        ]
    assert any(text.endswith("Inspect it to examine it closely.") for text in playing)
    assert not any("Inspect it" in text for text in over)  # allowed_ops is empty now
    assert len(over) == len(objects)


async def test_observe_costs_nothing(agent):
    entered = await agent.enter()
    h = entered["attempt_handle"]
    seen = await agent.tool("observe_chamber", challenge_handle=h, object=entered["objects"][0])
    assert seen["action_index"] == 0
    assert seen["observation"]
    look = await agent.tool(
        "chamber_action", challenge_handle=h, op="look", expected_action_index=0
    )
    assert look["action_index"] == 1


async def test_aliases_answer_until_the_cutoff_day_then_point_at_the_canonical_name(agent, wall):
    wall.current = dt.datetime(2027, 2, 21, 23, 59, 59, tzinfo=dt.UTC)
    entered = await agent.tool("start_challenge", **ENTRY)
    h = entered["attempt_handle"]
    await agent.tool("challenge_action", challenge_handle=h, op="look")
    wall.current = dt.datetime(2027, 2, 22, tzinfo=dt.UTC)
    for alias, canonical, args in (
        ("start_challenge", "enter_open_challenge", ENTRY),
        ("challenge_action", "chamber_action", {"challenge_handle": h, "op": "look"}),
        ("finish_challenge", "seal_attempt", {"challenge_handle": h}),
    ):
        body = await agent.refused(alias, **args)
        assert body["code"] == "toolset_version_mismatch"
        assert canonical in body["recovery_hint"]
    assert (await agent.tool("chamber_action", challenge_handle=h, op="look"))["action_index"] == 2


async def test_summoned_needs_an_operator(runtime, chamber):
    toolset, _ = chamber
    community = Agent(runtime, dict(toolset.handlers))
    body = await community.refused("enter_open_challenge", **ENTRY, origin="summoned")
    assert body["code"] == "identity_invalid"
    operator = Agent(runtime, dict(toolset.handlers), Principal("ops", frozenset({"operator"})))
    reply = await operator.enter(origin="summoned")
    assert reply["assurance"] == "scoreia_controlled"
    sealed = await operator.tool("seal_attempt", challenge_handle=reply["attempt_handle"])
    assert sealed["card"]["identity"]["assurance"] == "scoreia_controlled"


async def test_every_error_code_is_reachable_through_the_tools(
    runtime, chamber, wall, options, tmp_path
):
    toolset, _ = chamber
    agent = Agent(runtime, dict(toolset.handlers))
    seen: set[str] = set()

    async def expect(code: str, name: str, **args: Any) -> dict[str, Any]:
        body = await agent.refused(name, **args)
        assert body["code"] == code, body
        seen.add(code)
        return body

    await expect("suite_unknown", "enter_open_challenge", **ENTRY, suite="chambre-xyz-v0")
    await expect("product_id_invalid", "enter_open_challenge", **{**ENTRY, "product": "gpt_5_"})
    await expect("host_is_not_a_product", "enter_open_challenge", **{**ENTRY, "product": "vscode"})
    await expect("host_required", "enter_open_challenge", **{**ENTRY, "host": " "})
    await expect("claim_conflict", "enter_open_challenge", **ENTRY, host_claim="zed")
    await expect("identity_incomplete", "enter_open_challenge", **{**ENTRY, "model_claim": " "})
    await expect("identity_invalid", "enter_open_challenge", **ENTRY, host_version="a@b.co")
    await expect("attempt_not_found", "observe_chamber", challenge_handle="chl-" + "0" * 16,
                 object="x")  # fmt: skip
    body = await expect(
        "attempt_not_found", "chamber_action", challenge_handle="sia_1234", op="look"
    )
    assert "sia_" in body["error"]

    h = (await agent.enter(seed="codes"))["attempt_handle"]
    await expect("object_not_available", "observe_chamber", challenge_handle=h, object="ghost")
    await expect("object_not_available", "chamber_action", challenge_handle=h, op="inspect",
                 object="ghost")  # fmt: skip
    room_ops = (await agent.tool("chamber_action", challenge_handle=h, op="look"))["allowed_ops"]
    wrong_op = next(op for op in default_contract().action_ops if op not in room_ops)
    await expect("op_not_allowed", "chamber_action", challenge_handle=h, op=wrong_op, value="1")
    await expect("value_format_invalid", "chamber_action", challenge_handle=h, op=room_ops[3],
                 value=["?"] * 16)  # fmt: skip
    body = await expect("stale_action_index", "chamber_action", challenge_handle=h, op="look",
                        expected_action_index=0)  # fmt: skip
    assert body["retryable"] is True
    assert body["current_action_index"] == 1
    for _ in range(63):
        await agent.tool("chamber_action", challenge_handle=h, op="look")
    await expect("action_limit_reached", "chamber_action", challenge_handle=h, op="look")
    await agent.tool("seal_attempt", challenge_handle=h)
    await expect("attempt_already_sealed", "chamber_action", challenge_handle=h, op="look")

    late = (await agent.enter())["attempt_handle"]
    wall.advance(7200)
    body = await expect("attempt_expired", "chamber_action", challenge_handle=late, op="look")
    assert body["attempt_state"] == "expired"
    assert (await agent.tool("seal_attempt", challenge_handle=late))["outcome"] == "expired"

    wall.current = dt.datetime(2027, 3, 1, tzinfo=dt.UTC)
    await expect("toolset_version_mismatch", "start_challenge", **ENTRY)

    options["chamber"]["signing_key"] = str(tmp_path / "no-such-key.pem")
    broken = (await agent.enter())["attempt_handle"]
    body = await expect("signature_unavailable", "seal_attempt", challenge_handle=broken)
    assert body["card_id"]
    assert body["evidence_status"] == "pending_signature"

    doc = copy.deepcopy(dict(default_contract().document))
    del doc["identity"]["publication_notice"]
    mute, _ = build_toolset(contract_from_data(doc))
    agent.handlers = dict(mute.handlers)
    await expect("publication_notice_missing", "enter_open_challenge", **ENTRY)

    # evidence_pending is declared by the contract, but the export bundle never controls
    # the canonical card, so no seal is refused for it.
    assert seen == default_contract().error_codes - {"evidence_pending"}


async def test_a_key_that_stops_loading_is_logged_once_not_on_every_seal(
    options, tmp_path, agent, caplog
):
    # The start refuses such a key; one configured later answered signature_unavailable to
    # every seal while the server's log said nothing.
    missing = tmp_path / "gone.pem"
    options["chamber"]["signing_key"] = str(missing)
    for seed in ("unsigned-1", "unsigned-2"):
        h = (await agent.enter(seed=seed))["attempt_handle"]
        body = await agent.refused("seal_attempt", challenge_handle=h)
        assert body["code"] == "signature_unavailable"
    told = [r for r in caplog.records if r.name == "agora.toolsets.chamber.service"]
    assert [r.levelname for r in told] == ["ERROR"], told
    assert str(missing) in told[0].getMessage()
    assert "No such file or directory" in told[0].getMessage()


async def test_a_configured_key_signs_cards_and_the_export_bundle_verifies(
    runtime, options, tmp_path, agent
):
    key = tmp_path / "chamber.key"
    key.write_text(KEY_HEX)
    options["chamber"]["signing_key"] = str(key)
    h = (await agent.enter(seed="signed"))["attempt_handle"]
    await agent.tool("chamber_action", challenge_handle=h, op="look")
    sealed = await agent.tool("seal_attempt", challenge_handle=h, include_export_bundle=True)
    assert sealed["evidence_status"] == "signed"
    assert sealed["attempt_state"] == "sealed"
    bundle = sealed["export_bundle"]
    trusted = [bundle["document"]["signature"]["public_key"]]
    assert verify.verify_document(json.dumps(bundle["document"]).encode(), trusted).ok
    assert [r["op"] for r in bundle["transcript"]] == ["look"]
    document = await runtime.read(lambda conn: store.card_document(conn, sealed["card_id"]))
    assert verify.verify_document(document, trusted).ok


async def test_agora_cards_verify_checks_an_export_bundles_transcript(options, tmp_path, agent):
    key = tmp_path / "chamber.key"
    key.write_text(KEY_HEX)
    options["chamber"]["signing_key"] = str(key)
    with trio.fail_after(30):
        h = (await agent.enter(seed="bundled"))["attempt_handle"]
        await solve(agent, h)
        sealed = await agent.tool("seal_attempt", challenge_handle=h, include_export_bundle=True)
    trusted = [sealed["export_bundle"]["document"]["signature"]["public_key"]]
    saved = tmp_path / "bundle.json"

    def verify(doc: dict[str, Any]) -> tuple[int, list[str]]:
        saved.write_text(json.dumps(doc))
        out: list[str] = []
        later = START + dt.timedelta(days=2)  # past the card's retention: it may retire
        return cards_cli.cmd_verify(
            saved, trusted_keys=trusted, out=out.append, err=out.append, now=later
        ), out

    n = len(sealed["export_bundle"]["transcript"])
    assert n == sealed["card"]["transcript_length"] > 3
    code, out = verify(sealed["export_bundle"])
    assert code == 0, out
    assert out[3] == f"  transcript: ok ({n} records give transcript_hash)"
    assert out[-1] == "VERDICT: genuine, a practice card"  # (a seed of the caller's)
    # What a reader sees must be what is checked: a card document with a genuine bundle's
    # document beside its own edited card, or a whole seal reply, is not a bundle.
    forged = json.loads(json.dumps(sealed["export_bundle"]["document"]))
    forged["card"]["outcome"] = "failed"
    assert verify({**forged, "document": sealed["export_bundle"]["document"]})[0] == 1
    assert verify(sealed)[0] == 2  # a seal reply: its card has no signature block
    # A transcript skipped by saying it retired, or given in another shape, is refused.
    for key, value in (("transcript_retired", True), ("transcript", {"0": {}})):
        code, out = verify({**sealed["export_bundle"], key: value})
        assert code == 2, out
        assert "transcript is a list, or retired and empty" in out[-1]
    retired = {**sealed["export_bundle"], "transcript_retired": True, "transcript": []}
    code, out = verify(retired)
    assert (code, out[3]) == (
        0,
        "  transcript: retired with the session, not checked (only the card is)",
    )
    assert "its transcript NOT checked" in out[-1]
    edited = copy.deepcopy(sealed["export_bundle"])
    edited["transcript"][1]["at"] = "2000-01-01T00:00:00Z"  # one record edited
    code, out = verify(edited)
    assert code == 1
    assert out[3].startswith("  transcript: MISMATCH")
    assert out[-1] == (
        "VERDICT: NOT genuine: the transcript does not give the card's transcript_hash"
    )
    dropped = copy.deepcopy(sealed["export_bundle"])
    del dropped["transcript"][-1]
    assert verify(dropped)[0] == 1


async def test_a_card_signed_by_the_operator_later_is_reported_signed(runtime, agent):
    h = (await agent.enter(seed="later"))["attempt_handle"]
    first = await agent.tool("seal_attempt", challenge_handle=h)
    assert first["evidence_status"] == "pending_signature"
    from agora.toolsets.chamber.signing import signer_from_bytes

    signer = signer_from_bytes(KEY_HEX.encode())
    pending = await runtime.read(store.pending_cards)
    assert [card_id for card_id, _ in pending] == [first["card_id"]]
    body = pending[0][1]
    await runtime.write(
        [store.add_signature(first["card_id"], cards.signature_block(signer, body, START))]
    )
    again = await agent.tool("seal_attempt", challenge_handle=h, include_export_bundle=True)
    assert again["already_sealed"]
    assert again["evidence_status"] == "signed"
    assert again["attempt_state"] == "sealed"
    assert again["card"] == first["card"]


async def test_call_for_help_gives_the_ally_its_own_door(agent):
    h = (await agent.enter())["attempt_handle"]
    reply = await agent.tool("call_for_help", challenge_handle=h, ally="claude-5")
    entry = reply["ally_entry"]["arguments"]
    assert entry["product"] == "claude-5"
    assert entry["suite"] == "chambre-chrono-v0"
    assert entry["seed"] == reply["invitation"]
    assert entry["seed"].startswith("inv-")
    body = await agent.refused("call_for_help", challenge_handle=h, ally="cursor")
    assert body["code"] == "host_is_not_a_product"


async def test_concurrent_actions_with_the_same_index_exactly_one_wins(agent):
    h = (await agent.enter())["attempt_handle"]
    results: list[str] = []

    async def attempt_look() -> None:
        try:
            await agent.tool(
                "chamber_action", challenge_handle=h, op="look", expected_action_index=0
            )
            results.append("ok")
        except ToolError as exc:
            results.append(exc.body["code"])

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for _ in range(12):
                nursery.start_soon(attempt_look)
    assert sorted(results) == ["ok"] + ["stale_action_index"] * 11


async def race(agent: Agent, handle: str, seal_first: bool) -> tuple[bool, dict[str, Any]]:
    """Start a seal and an action on one attempt at once; (whether the action won, card)."""
    acted: list[bool] = []
    sealed: dict[str, Any] = {}

    async def act() -> None:
        try:
            await agent.tool("chamber_action", challenge_handle=handle, op="look")
            acted.append(True)
        except ToolError:
            acted.append(False)

    async def seal() -> None:
        sealed.update(await agent.tool("seal_attempt", challenge_handle=handle))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for job in (seal, act) if seal_first else (act, seal):
                nursery.start_soon(job)
    return acted[0], sealed


@pytest.mark.parametrize("suite", ["chambre-chrono-v0", "chambre-atelier-v0"])
async def test_a_card_counts_the_hints_given_not_the_hint_calls(agent, suite):
    h = (await agent.enter(seed="hints", suite=suite))["attempt_handle"]
    said = [
        (await agent.tool("chamber_action", challenge_handle=h, op="hint"))["observation"]
        for _ in range(5)
    ]
    assert [s.split(" for ")[0] for s in said[:3]] == ["Hint 1", "Hint 2", "Hint 3"]
    assert all(s.startswith("No further hints") for s in said[3:])
    sealed = await agent.tool("seal_attempt", challenge_handle=h)
    assert sealed["card"]["hints_used"] == 3
    assert sealed["card"]["actions_used"] == 5  # every call is still an action spent


async def test_a_seal_racing_an_action_leaves_a_consistent_card(agent):
    for n in range(6):
        h = (await agent.enter(seed=f"race-{n}"))["attempt_handle"]
        won, sealed = await race(agent, h, seal_first=bool(n % 2))
        # Whichever the actor took first, the card counts exactly the actions that happened.
        assert sealed["card"]["actions_used"] == int(won)
        assert sealed["card"]["transcript_length"] == int(won)


async def test_an_attempt_survives_a_restart(tmp_path, chamber):
    toolset, _ = chamber
    path = tmp_path / "agora.db"
    wall = FakeWall(START)

    async def session(work):
        async with open_store(path, store.MIGRATIONS) as st, trio.open_nursery() as nursery:
            rt = Runtime(st, nursery, clock=Clock(wall))
            try:
                return await work(Agent(rt, dict(toolset.handlers)))
            finally:
                rt.begin_shutdown()
                nursery.cancel_scope.cancel()

    async def first(agent: Agent) -> tuple[str, str]:
        h = (await agent.enter(seed="restart"))["attempt_handle"]
        await agent.tool("chamber_action", challenge_handle=h, op="look")
        r = await agent.tool("chamber_action", challenge_handle=h, op="hint")
        return h, r["observation"]

    async def second(agent: Agent) -> dict[str, Any]:
        await agent.refused(
            "chamber_action", challenge_handle=h, op="look", expected_action_index=1
        )
        r = await agent.tool(
            "chamber_action", challenge_handle=h, op="hint", expected_action_index=2
        )
        assert r["observation"].startswith("Hint 2")
        return await agent.tool("seal_attempt", challenge_handle=h)

    with trio.fail_after(30):
        h, hint = await session(first)
        assert hint.startswith("Hint 1")
        sealed = await session(second)
    assert sealed["card"]["transcript_length"] == 3
    assert sealed["card"]["hints_used"] == 2


async def test_operators_can_quarantine_an_attempt(runtime, chamber, agent):
    _, handlers = chamber
    h = (await agent.enter())["attempt_handle"]
    reply = await handlers.quarantine(runtime, h, "answers arrived before the clues were read")
    assert reply["outcome"] == "quarantined"
    assert reply["attempt_state"] == "quarantined"
    again = await agent.tool("seal_attempt", challenge_handle=h)
    assert again["already_sealed"]
    assert again["attempt_state"] == "quarantined"
    assert again["card"]["quarantine"]["reason"].startswith("answers arrived")


async def test_start_up_purges_retired_sessions(runtime, chamber, agent, wall, autojump_clock):
    toolset, _ = chamber
    h = (await agent.enter())["attempt_handle"]
    await agent.tool("seal_attempt", challenge_handle=h)
    wall.advance(86401)
    with trio.move_on_after(1):  # the purge's first pass runs at once
        await toolset.background[0](runtime)
    count = await runtime.read(
        lambda c: c.execute("SELECT count(*) FROM chamber_attempts").fetchone()[0]
    )
    assert count == 0
    assert len(await runtime.read(lambda c: listings.list_cards(c, "2026-11-30"))) == 1


@pytest.mark.parametrize("suite", ["chambre-chrono-v0", "chambre-atelier-v0"])
async def test_both_suites_are_solvable_through_the_tools(agent, suite):
    with trio.fail_after(30):
        h = (await agent.enter(suite=suite, seed="both"))["attempt_handle"]
        last = await solve(agent, h)
        assert last["locks_open"] == last["locks_total"]
