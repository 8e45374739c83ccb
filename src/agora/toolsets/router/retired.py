"""Why a ``proposed`` candidate should not simply be approved: said in the list's text block.

After a rollback (or any revision) removes an approved candidate's rule, the runs it was
learnt from are still remembered, so `list_workflow_candidates` derives it again, as
``proposed``: an agent that approves proposed candidates would put back the rule the user
just rolled back. And a candidate whose runs a manual Profile (the user's own file) already
plans can never be approved (its backtest fails on manual precedence): its rule would never
be used. The outputSchema has no field for either, so a text block says so.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agora.toolsets.router import previews, profiles
from agora.toolsets.router.backtest_notes import seed_of
from agora.toolsets.router.memory import MEMORY
from agora.toolsets.router.memory_commands import History
from agora.toolsets.router.ownership import memory_key

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall
    from agora.toolsets.router.candidates import Mined


async def retired_notes(call: ToolCall, mined: list[Mined], keys: dict[str, str],
                        manual: list[profiles.Profile]) -> list[str]:  # fmt: skip
    """A sentence for each ``proposed`` candidate whose runs a ``manual`` Profile plans, and
    for each whose rule an earlier revision of its target's managed Profile held and its
    current one does not; ``keys``: the profile key of each managed target this workspace
    may change."""
    said = [n for m in mined if m.candidate["status"] == "proposed"
            and (n := outranked(m, manual)) is not None]  # fmt: skip
    proposed = [m for m in mined if m.candidate["status"] == "proposed"
                and m.candidate["target_profile_class"] in keys]  # fmt: skip
    if not proposed:
        return said
    wanted = tuple(sorted(keys.items()))
    revisions, _kept, _decided = await call.runtime.call(
        MEMORY, memory_key(call.principal), History(wanted)
    )
    for m in proposed:
        target = m.candidate["target_profile_class"]
        history: list[Any] = revisions.get((target, keys[target]), [])
        rule = previews.rule_of(m)
        held = [(no, rid) for no, rid, _d, doc in history[:-1]
                if previews.holds(json.loads(doc)["rules"], rule)]  # fmt: skip
        if held and not previews.holds(json.loads(history[-1][3])["rules"], rule):
            said.append(retired(m.candidate["candidate_id"], target, *held[-1], history[-1][0]))
    return said


def retired(candidate_id: str, target: str, no: int, rid: str, current: int) -> str:
    """Why ``candidate_id`` is proposed again: revision ``no`` held its rule, ``current``
    does not."""
    return (
        f"Candidate {candidate_id} is proposed again: revision {no} ({rid}) of the {target}"
        f" Profile held its rule, and the current revision {current} (a rollback, or a revision"
        " restoring an earlier Profile) does not; its runs are still remembered, so it is"
        " derived again. Approving it puts the rule back; if the user rolled it back, do not"
        " approve it: reject it (preview_profile_update, then transition_profile_update action"
        " reject) to keep it out for 180 days."
    )


def outranked(m: Mined, manual: list[profiles.Profile]) -> str | None:
    """Why ``m`` cannot be approved when a manual Profile plans its runs' context, or None."""
    doc = m.members[0].document
    route = profiles.resolve(manual, tuple(doc.get("domains", [])), tuple(doc.get("tags", [])),
                             None)  # fmt: skip
    if route.rule_id is None:
        return None
    return (
        f"Candidate {m.candidate['candidate_id']} is proposed but cannot be approved: the user's"
        f" rule {route.rule_id} already plans the routing context of its runs{seed_of(doc)},"
        " and a manual Profile outranks every managed one, so its rule would never be used"
        " (its preview says profile-backtest-failed). Leave it, or reject it to keep it out"
        " for 180 days."
    )
