"""What a candidate whose backtest fails is told: the cause that applies, and what to do.

Tester finding: a candidate learnt from runs the user's own workspace Profile already plans
was previewed ``previewed``, ``profile-backtest-failed`` with no text block (docs/router.md:
every blocked answer of the Profile tools has one), and its approval was refused with three
possible causes ("coverage under 0.75, a planned route regression, or a manual Profile that
takes precedence") rather than the one that applied.
"""

from __future__ import annotations

from profile_files import profile, write_workspace
from test_router_guidance import texts
from test_router_memory_answers import approve, listed, preview, record

from agora.toolsets.router.backtest_notes import causes


async def test_a_manual_profile_taking_precedence_is_named_with_what_to_do(
    router, runtime, workspace
):
    team = profile("team", rule="web-feature", domains=("web",), skills=("skill:lead",))
    write_workspace(workspace, team)
    await record(router, runtime, workspace, "web")
    (candidate,) = (await listed(router, workspace))["candidates"]
    said = texts(await listed(router, workspace))[-1]
    assert said.startswith(
        f"Candidate {candidate['candidate_id']} is proposed but cannot be approved: the user's"
        ' rule team#web-feature already plans the routing context of its runs (domains ["web"],'
    )
    shown = await preview(router, workspace, candidate["candidate_id"])
    assert (shown["status"], shown["reason_codes"]) == ("previewed", ["profile-backtest-failed"])
    note = texts(shown)[-1]
    assert note.startswith("Previewed, but it cannot be approved: profile-backtest-failed: a")
    assert "the user's rule team#web-feature" in note
    assert 'its runs (domains ["web"], tags ["feature"])' in note
    assert "this rule would never be used and there is nothing to approve" in note
    assert "coverage" not in note
    refused = await approve(router, workspace, shown["proposal"])
    assert refused["reason_codes"] == ["profile-backtest-failed"]
    said = texts(refused)[-1]
    assert "a manual Profile takes precedence" in said
    assert "coverage under 0.75" not in said
    assert "planned route regression" not in said


def test_each_cause_is_said_only_when_it_applies():
    test = {"manual_precedence": False, "positive_match_count": 2,
            "positive_observation_count": 4, "positive_match_coverage": 0.5,
            "planned_route_regressions": 0}  # fmt: skip
    said = causes(test)
    assert said.startswith("its rule plans exactly 2 of its 4 runs' routes (coverage 0.50")
    assert "regression" not in said
    assert "manual" not in said
    said = causes({**test, "positive_match_coverage": 1.0, "planned_route_regressions": 1})
    assert said.startswith("1 other remembered run that its rule matches took another route")
    assert "coverage" not in said
