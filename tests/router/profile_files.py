"""Profile documents for the tests, and a writer for workspace files."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path


def profile(profile_id: str, *, rule: str = "r1", domains: tuple[str, ...] = (),
            envelope: str | None = None, skills: tuple[str, ...] = ("skill:a",),
            support: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """A valid Profile with one rule whose phases have the given primary skills."""
    rule_doc: dict[str, Any] = {
        "rule_id": rule,
        "match": {"domains_any": list(domains)} if domains else {},
        "phases": [
            {
                "phase_id": f"p{n}",
                "primary_skill_id": skill,
                "support_skill_ids": list(support),
                "exit_gate": {"gate_id": f"g{n}", "check_ids": [f"c{n}"]},
            }
            for n, skill in enumerate(skills, start=1)
        ],
    }
    if envelope:
        rule_doc["envelope"] = envelope
    return {"format": "agora-router-profile/1", "profile_id": profile_id, "rules": [rule_doc]}


def write_workspace(root: Path, doc: dict[str, Any] | str) -> Path:
    """Write ``root/.codex/workflow-skill-router.json``."""
    target = root / ".codex" / "workflow-skill-router.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return target
