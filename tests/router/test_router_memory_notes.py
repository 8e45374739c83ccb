"""Every blocked or not-found answer of the Profile tools says what to do next, in a text block.

Tester finding: Memory's blocked and not-found answers (a suppressed candidate, an unknown
proposal or revision, Memory off) carried reason codes alone: the outputSchemas have no field
for the next step, so the answer must say it as text.
"""

from __future__ import annotations

from memory_support import memory_workspace, request_mode
from test_router_guidance import texts
from test_router_memory_answers import approve, listed, preview, record, rollback


async def test_the_profile_tools_say_what_to_send_when_nothing_can_be_done(
    router, runtime, tmp_path, options
):
    root = memory_workspace(tmp_path, options, requested=None)
    off = await preview(router, root, "candidate:" + "0" * 32)  # no request file: Memory off
    assert off["status"] == "blocked"
    assert "Blocked: the Memory policy's effective mode is" in texts(off)[-1]
    assert "get_memory_status says why" in texts(off)[-1]
    request_mode(root, "reviewed")
    await record(router, runtime, root, "web")
    (candidate,) = (await listed(router, root))["candidates"]
    proposal = (await preview(router, root, candidate["candidate_id"]))["proposal"]
    unknown = {**proposal, "proposal_id": "proposal:" + "0" * 32}
    missing = await approve(router, root, unknown)
    assert missing["reason_codes"] == ["profile-proposal-not-found"]
    assert "Send the proposal_id of a preview_profile_update" in texts(missing)[-1]
    applied = await approve(router, root, proposal)
    nowhere = await rollback(router, root, "revision:" + "0" * 32,
                             proposal["proposed_profile_digest"])  # fmt: skip
    assert nowhere["reason_codes"] == ["rollback-source-revision-unavailable"]
    # its only revision is the current one, which a rollback refuses: none is listed
    assert applied["revision_id"] not in texts(nowhere)[-1]
    assert "no kept revision holds another Profile than the current one" in texts(nowhere)[-1]
    await record(router, runtime, root, "db")
    (db,) = [c for c in (await listed(router, root))["candidates"] if c["status"] == "proposed"]
    second = (await preview(router, root, db["candidate_id"]))["proposal"]
    assert (await approve(router, root, second, action="reject"))["status"] == "rejected"
    suppressed = await preview(router, root, db["candidate_id"])
    assert suppressed["reason_codes"] == ["candidate-suppressed"]
    assert "candidate-suppressed: the user rejected this candidate" in texts(suppressed)[-1]
