"""A plan's key replays for a resend the plan reads alike: ``routing_context``'s domains and
tags in another order or repeated, or a context of empty members for none (tester finding:
those were refused as a reused key, though the plan and everything it matches are the same).
A key kept before that rule, under the digest of the arguments as sent, still replays."""

from __future__ import annotations

from router_driver import Router, plan_args

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.toolsets.router.digests import request_digest

OBJECTIVE = "Write a README section"


def _routing(**given):
    return {"workspace_root": None, "domains": [], "tags": [], "current_phase_id": None, **given}


async def test_domains_and_tags_in_another_order_or_repeated_replay(router):
    sent = _routing(domains=["web", "api"], tags=["b", "a"])
    first = await router.plan(OBJECTIVE, idem="k-order", routing_context=sent)
    again = await router.plan(OBJECTIVE, idem="k-order",
                              routing_context=_routing(domains=["api", "web", "api"],
                                                       tags=["a", "b", "b"]))  # fmt: skip
    assert again == first  # the kept result (a plan's has no replayed field)
    # A different set is still a different command.
    other = plan_args(OBJECTIVE, idem="k-order", routing_context=_routing(domains=["api"]))
    body = await router.refused("plan_work", **other)
    assert ": routing_context differs from that plan's in domains" in body["message"]


async def test_an_empty_context_is_the_same_as_none(router):
    first = await router.plan(OBJECTIVE, idem="k-none")
    again = await router.plan(OBJECTIVE, idem="k-none", routing_context=_routing())
    assert again == first
    back = await router.plan(OBJECTIVE, idem="k-empty", routing_context=_routing())
    assert await router.plan(OBJECTIVE, idem="k-empty") == back
    assert back["workflow_run_id"] != first["workflow_run_id"]


async def test_a_key_kept_under_the_digest_as_sent_still_replays(router, runtime, nursery):
    sent = plan_args(OBJECTIVE, idem="k-old", routing_context=_routing(domains=["web", "api"]))
    first = await router.plan(OBJECTIVE, idem="k-old",
                              routing_context=_routing(domains=["web", "api"]))  # fmt: skip
    # What an earlier server kept: the digest of the arguments as they were sent.
    as_sent = request_digest("plan_work", sent)
    await runtime.write([("UPDATE router_ledger SET request_digest = ? WHERE idempotency_key = ?",
                          (as_sent, "k-old"))])  # fmt: skip
    fresh = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall())))  # reloads the rows
    assert await fresh.call("plan_work", **sent) == first
    moved = {**sent, "routing_context": _routing(domains=["docs"])}
    assert (await fresh.refused("plan_work", **moved))["code"] == "idempotency-conflict"
