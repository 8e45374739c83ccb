"""What a rollback's answers say of the way out, and of the candidate it rolled back.

Tester findings: a rollback refused because the Profile had only one revision said "there is
nothing to roll back to" and no way out, though docs/router.md names one (a purge of the
managed Profiles); and after an approved rollback, the candidate whose rule it removed was
listed ``proposed`` again at once, with no word, so an agent that approves proposed
candidates would put the rolled-back rule back.
"""

from __future__ import annotations

from test_router_guidance import texts
from test_router_memory_answers import approve, approved_pair, listed, preview, record, rollback

WAY_OUT = (
    "To retire its rules, purge the managed Profiles: purge_workflow_memory scope"
    " managed-profiles-only deletes every managed Profile (managed-personal and every"
    " workspace's managed-workspace-local), with all their revisions and pending proposals"
)


async def test_nothing_to_roll_back_to_names_the_purge_and_what_it_deletes(
    router, runtime, workspace
):
    await record(router, runtime, workspace, "web")
    (candidate,) = (await listed(router, workspace))["candidates"]
    proposal = (await preview(router, workspace, candidate["candidate_id"]))["proposal"]
    rev1 = await approve(router, workspace, proposal)
    same = await rollback(router, workspace, rev1["revision_id"],
                          proposal["proposed_profile_digest"])  # fmt: skip
    assert same["reason_codes"] == ["rollback-source-revision-unavailable"]
    assert WAY_OUT in texts(same)[-1]
    assert "keeps the remembered runs" in texts(same)[-1]
    missing = await rollback(router, workspace, "revision:" + "0" * 32,
                             proposal["proposed_profile_digest"], key="rb2")  # fmt: skip
    assert WAY_OUT in texts(missing)[-1]
    again = await preview(router, workspace, candidate["candidate_id"])
    assert WAY_OUT in texts(again)[-1]


async def test_a_rolled_back_candidate_is_said_proposed_again(router, runtime, workspace):
    (_p1, rev1), (p2, rev2) = await approved_pair(router, runtime, workspace)
    pending = await rollback(router, workspace, rev1["revision_id"], p2["proposed_profile_digest"])
    assert (await approve(router, workspace, pending["proposal"]))["status"] == "applied"
    for status in (None, "proposed"):
        answer = await listed(router, workspace, status=status)
        (db,) = [c for c in answer["candidates"] if c["status"] == "proposed"]
        note = texts(answer)[-1]
        assert (
            f"Candidate {db['candidate_id']} is proposed again: revision 2"
            f" ({rev2['revision_id']}) of the managed-personal Profile held its rule, and the"
            " current revision 3"
        ) in note
        assert "if the user rolled it back, do not approve it: reject it" in note
    approved = await listed(router, workspace, status="approved")
    assert len(texts(approved)) == 1  # no word of the proposed one
