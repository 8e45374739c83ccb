"""Automatic-managed promotion: managed Profile revisions written without a review step.

A policy whose ``profile_promotion`` is ``automatic-managed`` (kept only when the effective
mode is ``automatic``) lets the router promote a candidate recommended for ``automatic`` (it
met 5 runs on 3 days, 0.90, 0.10 and 0.85) by itself: the Memory upkeep task reproduces the
candidate's preview exactly as ``preview_profile_update`` would and applies it through the
same CAS as ``transition_profile_update`` (the next revision only), when the backtest is
acceptable, the target is a managed one the policy allows, the route was not an Explicit
Skill Lock, the user has not rejected the candidate and its rule is not in force already
(approved on review: its runs may make it one recommended for ``automatic`` later). The
revision's source names the candidate, which is then listed ``auto-promoted``. A candidate
the policy keeps from it is listed with the reason (``profile-promotion-disabled``,
``automatic-user-profile-write-forbidden``, ``explicit-route-requires-review``) and waits
for review. The task sees the personal scope only: a workspace's request file is read only
under a root a call names, so workspace candidates are always reviewed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import trio

from agora.toolsets.router import candidates, previews
from agora.toolsets.router.digests import digest
from agora.toolsets.router.layers import read_layers
from agora.toolsets.router.memory import MEMORY
from agora.toolsets.router.memory_commands import ApplyRevision, Managed, Promoted
from agora.toolsets.router.memory_sql import AUTO_SOURCE, owners
from agora.toolsets.router.memory_tools import (
    PERSONAL_SCOPE,
    make_id,
    observations_in,
    personal_policy,
    sweep,
)
from agora.toolsets.router.ownership import memory_key_of
from agora.toolsets.router.profile_tools import SUPPRESSION, in_force, profile_key, rules_held
from agora.toolsets.router.sql import stamp

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime

log = logging.getLogger(__name__)

#: The receipt session of the promotions the router makes by itself.
AUTO_SESSION: Final = "router-automatic-promotion"


async def promote(runtime: Runtime, owner: str) -> int:
    """Promote every personal candidate of ``owner``'s Memory the policy lets through;
    returns how many."""
    policy = await personal_policy(runtime)
    if policy.profile_promotion != "automatic-managed":
        return 0
    memory = memory_key_of(owner)
    observed = await observations_in(runtime, owner, PERSONAL_SCOPE)
    mined = candidates.mine_with_routes(observed, PERSONAL_SCOPE, policy.effective_mode,
                                        policy.digest)  # fmt: skip
    _latest, rejections = await runtime.call(MEMORY, memory, Managed(()))
    done = await runtime.call(MEMORY, memory, Promoted())
    since = stamp(runtime.clock.wall() - SUPPRESSION)
    ready = [
        m for m in mined
        if m.candidate["recommendation_mode"] == "automatic"
        and not candidates.promotion_blockers(m, policy.profile_promotion)
        and m.candidate["target_profile_class"] in policy.allowed_targets
        and max(rejections.get(cid, "") for cid in m.ids) < since
        and done.isdisjoint(m.ids)
    ]  # fmt: skip
    if not ready:
        return 0
    personal = runtime.options("router").get("personal_profile")
    manual, _warnings = await trio.to_thread.run_sync(read_layers, None, [], personal)
    applied = 0
    for m in ready:
        target = m.candidate["target_profile_class"]
        key = profile_key(target, PERSONAL_SCOPE)
        if key is None:
            continue
        latest, _ = await runtime.call(MEMORY, memory, Managed(((target, key),)))
        if in_force(m, rules_held(latest), PERSONAL_SCOPE):  # approved on review: no change
            continue
        proposal, _reasons, _problems = previews.preview(m, observed, manual, policy.digest,
                                                         latest.get((target, key)))  # fmt: skip
        if proposal is None or not proposal["backtest"]["acceptable"]:
            continue
        reply = await runtime.call(MEMORY, memory, _apply(m, proposal, target, key))
        applied += reply.get("status") == "applied"
    if applied:
        log.info("router memory promoted %d candidates automatically", applied)
    return applied


def _apply(m: candidates.Mined, proposal: dict[str, Any], target: str, key: str) -> ApplyRevision:
    no = proposal["state_version"]
    revision_id = make_id("revision", target, key, str(no), proposal["proposed_profile_digest"])
    revision_digest = digest([revision_id, proposal["proposed_profile_digest"]])
    result = {"status": "applied", "revision_id": revision_id, "revision_digest": revision_digest}
    return ApplyRevision(
        session_id=AUTO_SESSION, idempotency_key=proposal["proposal_id"].replace(":", "-"),
        request_digest=proposal["proposal_digest"], target=target, profile_key=key,
        revision_no=no, revision_id=revision_id, profile_json=proposal["proposed_profile_json"],
        profile_digest=proposal["proposed_profile_digest"],
        source=AUTO_SOURCE + m.candidate["candidate_id"], result=result,
        blocked={"status": "blocked"},
    )  # fmt: skip


async def upkeep(runtime: Runtime) -> None:
    """The Memory background step, for each owner's Memory in turn: retention, then
    automatic promotion."""
    for owner in await runtime.read(owners):
        await sweep(runtime, owner)
        await promote(runtime, owner)
