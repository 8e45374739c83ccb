"""call_for_help hands out an invitation, never the ally's room: the server keeps the seed.

The ally enters with the invitation as its seed; the token redeems once, for the product it
names, into the room of the seed the server drew; that attempt is server-seeded.
"""

from __future__ import annotations

import json

import trio
from chamber_agent import ENTRY, Agent

from agora.toolsets.chamber.generate import build_room


async def _invite(agent: Agent, ally: str = "claude-5", **entry) -> tuple[str, dict]:
    h = (await agent.enter(**entry))["attempt_handle"]
    return h, await agent.tool("call_for_help", challenge_handle=h, ally=ally)


async def _kept_seed(runtime, token: str) -> tuple[str, str]:
    def read(conn):
        return conn.execute(
            "SELECT seed, suite_id FROM chamber_invitations WHERE token = ?", (token,)
        ).fetchone()

    return await runtime.read(read)


async def test_the_caller_gets_an_invitation_and_never_the_allys_seed(agent, runtime):
    _, reply = await _invite(agent)
    token = reply["invitation"]
    seed, _ = await _kept_seed(runtime, token)
    assert seed not in json.dumps(reply)
    assert reply["ally_entry"]["arguments"]["seed"] == token
    assert len(seed) == 32  # 128 bits, drawn by the server


async def test_the_ally_redeems_the_invitation_into_the_kept_room_once(agent, runtime):
    _, reply = await _invite(agent, suite="chambre-atelier-v0")
    args = reply["ally_entry"]["arguments"]
    seed, suite = await _kept_seed(runtime, args["seed"])
    entered = await agent.tool("enter_open_challenge", **{**ENTRY, **args})
    assert entered["invited"] is True
    assert entered["seed_source"] == "server"
    assert entered["suite_id"] == suite == "chambre-atelier-v0"
    assert entered["room"] == build_room(suite, "atelier", seed).title
    handle = entered["attempt_handle"]
    look = await agent.tool("chamber_action", challenge_handle=handle, op="look")
    assert look["observation"].startswith(build_room(suite, "atelier", seed).title)
    card = (await agent.tool("seal_attempt", challenge_handle=handle))["card"]
    assert (card["seed_source"], card["practice"]) == ("server", False)
    again = await agent.refused("enter_open_challenge", **{**ENTRY, **args})
    assert again["code"] == "op_not_allowed"
    assert "already redeemed: it enters one room, once" in again["error"]
    assert "call_for_help" not in again["recovery_hint"]  # it would answer the same token


async def test_naming_an_ally_again_after_it_entered_says_the_invitation_is_used(agent):
    handle, first = await _invite(agent)
    again = await agent.tool("call_for_help", challenge_handle=handle, ally="claude-5")
    assert again["invitation"] == first["invitation"]  # not entered yet: the same, still live
    assert "redeemed" not in again
    product = {k: v for k, v in ENTRY.items() if k != "product"}
    await agent.tool("enter_open_challenge", **first["ally_entry"]["arguments"], **product)
    used = await agent.tool("call_for_help", challenge_handle=handle, ally="claude-5")
    assert used["redeemed"] is True
    assert "ally_entry" not in used
    assert "already entered its room with this invitation" in used["note"]


async def test_an_invitation_is_for_its_product_and_suite(agent):
    _, reply = await _invite(agent)
    token = reply["invitation"]
    wrong = await agent.refused("enter_open_challenge", **{**ENTRY, "product": "other-bot"},
                                seed=token)  # fmt: skip
    assert wrong["code"] == "claim_conflict"
    other_suite = await agent.refused(
        "enter_open_challenge", **{**ENTRY, "product": "claude-5"}, seed=token,
        suite="chambre-atelier-v0",
    )  # fmt: skip
    assert other_suite["code"] == "claim_conflict"
    # Refusals redeem nothing: the ally still gets in.
    entered = await agent.tool("enter_open_challenge", **reply["ally_entry"]["arguments"],
                               **{k: v for k, v in ENTRY.items() if k != "product"})  # fmt: skip
    assert entered["invited"] is True


async def test_unknown_invitations_are_refused(agent):
    body = await agent.refused("enter_open_challenge", **ENTRY, seed="inv-" + "0" * 32)
    assert body["code"] == "op_not_allowed"
    assert "is not an invitation this server issued" in body["error"]


async def test_concurrent_redemptions_let_exactly_one_ally_in(agent):
    _, reply = await _invite(agent)
    args = {**ENTRY, **reply["ally_entry"]["arguments"]}
    outcomes: list[str] = []

    async def enter() -> None:
        try:
            await agent.tool("enter_open_challenge", **args)
            outcomes.append("in")
        except Exception as exc:
            outcomes.append(exc.body["code"])  # type: ignore[attr-defined]

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for _ in range(6):
                nursery.start_soon(enter)
    assert sorted(outcomes) == ["in"] + ["op_not_allowed"] * 5


async def test_a_dead_invitation_is_not_worth_retrying(agent):
    """Tester finding: a redeemed invitation was refused as ``value_format_invalid``, telling
    an agent that branches on ``code`` to try other spellings of a well-formed token."""
    body = await agent.refused("enter_open_challenge", **ENTRY, seed="inv-" + "0" * 32)
    assert (body["code"], body["retryable"]) == ("op_not_allowed", False)
    _, reply = await _invite(agent)
    args = reply["ally_entry"]["arguments"]
    await agent.tool("enter_open_challenge", **{**ENTRY, **args})
    again = await agent.refused("enter_open_challenge", **{**ENTRY, **args})
    assert (again["code"], again["retryable"]) == ("op_not_allowed", False)
    assert again["error"].endswith("is an invitation already redeemed: it enters one room, once.")


async def test_inspect_without_an_object_says_it_needs_one(agent):
    handle = (await agent.enter())["attempt_handle"]
    body = await agent.refused("chamber_action", challenge_handle=handle, op="inspect")
    assert body["code"] == "object_not_available"
    assert body["error"].startswith("inspect needs `object`: one of ")
    assert "None" not in body["error"]


async def test_ally_entry_names_the_claims_the_ally_adds(agent):
    _, reply = await _invite(agent)
    entry = reply["ally_entry"]
    adds = entry["ally_adds"]
    assert adds == ["provider_claim", "model_claim", "host"]
    assert all(name in entry["note"] for name in adds)
    alone = await agent.refused("enter_open_challenge", **entry["arguments"])
    assert alone["code"] in ("identity_incomplete", "host_required")
    claims = {name: ENTRY[name] for name in adds}
    entered = await agent.tool("enter_open_challenge", **entry["arguments"], **claims)
    assert entered["invited"] is True


def test_the_readme_says_what_the_ally_adds_to_ally_entry():
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    assert "exact call" not in readme
    assert "`ally_entry`" in readme
    assert "provider_claim`, `model_claim` and `host`" in readme


async def test_a_call_for_help_costs_no_action(agent):
    """call_for_help's served description says so: the actions before and after match."""
    h, reply = await _invite(agent)
    assert reply["invitation"].startswith("inv-")
    looked = await agent.tool("chamber_action", challenge_handle=h, op="look")
    assert looked["action_index"] == 1
    made_up = await agent.refused("enter_open_challenge", **ENTRY, seed="inv-anything")
    assert "is not an invitation this server issued" in made_up["error"]
