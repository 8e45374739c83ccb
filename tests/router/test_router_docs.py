"""docs/router.md documents exactly the refusal codes the router can answer."""

from __future__ import annotations

import re
from pathlib import Path

from agora.toolsets.router.replies import REFUSAL_CODES

DOC = Path(__file__).parents[2] / "docs" / "router.md"


def test_every_refusal_code_is_documented_and_nothing_else():
    table = DOC.read_text().split("## Refusal codes", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    documented = {code for row in rows for code in re.findall(r"`([a-z-]+)`", row)}
    assert documented == REFUSAL_CODES | {"invalid-arguments", "internal-error"}


def test_the_readmes_evidence_digest_example_is_what_a_gate_expects():
    from agora.toolsets.router.progress import evidence_digest

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    refs = ["sha256:" + "b" * 64, "sha256:" + "a" * 64, "sha256:" + "b" * 64]
    assert f"whose digest is\n`{evidence_digest(refs)}`" in readme


def test_the_docs_quote_the_note_that_names_the_next_writes_versions():
    from agora.toolsets.router.guidance import next_write

    note = next_write(1, 1)
    for doc in (DOC, Path(__file__).parents[2] / "README.md"):
        assert note in " ".join(doc.read_text().split()), doc


async def test_the_sessions_totals_are_asked_with_a_null_run_as_the_docs_say(router):
    """Reviewer finding: docs/router.md said "without workflow_run_id", which the schema
    requires (nullable): a call without it is refused."""
    from router_driver import INPUTS, ctx

    text = " ".join(DOC.read_text().split())
    assert "without `workflow_run_id`" not in text
    assert "with `workflow_run_id` null" in text
    args = {"context": ctx(), "goal_binding_id": None}
    assert INPUTS["get_router_status"].problems(args)  # the field is required
    totals = await router.call("get_router_status", **args, workflow_run_id=None)
    assert totals["workflow_run_id"] is None
