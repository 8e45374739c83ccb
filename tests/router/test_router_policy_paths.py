"""A configured file that is not there is named by the absolute path the server tried.

Tester finding: with relative paths in ``[options.router]`` (which resolve against the
server's working directory: each project's, for a host that starts ``agora stdio`` there),
the missing Memory policy was named only as configured, get_memory_status had no text block,
and ``workspace-policy-exceeds-ceiling`` was left unexplained, though the ceiling was only
"disabled" because the personal policy file was not found.
"""

from __future__ import annotations

import os

from memory_support import completed_run, remember_args, status
from test_router_guidance import texts

RELATIVE = "no-such-dir/router-memory.json"


def tried(path):
    return f"{os.path.abspath(path)} (configured as {path}, relative to the server's working"


async def test_a_missing_memory_policy_is_named_with_its_absolute_path(router, workspace, options):
    options["router"]["memory_policy"] = RELATIVE
    answer = await status(router, workspace)
    assert answer["reason_codes"] == [
        "personal-policy-missing", "workspace-policy-exceeds-ceiling", "memory-disabled",
    ]  # fmt: skip
    note = texts(answer)[-1]
    assert f"Memory policy problems: personal policy: {tried(RELATIVE)}" in note
    assert note.splitlines()[-1] == (
        "workspace-policy-exceeds-ceiling: the workspace requests reviewed, above the personal"
        " ceiling disabled, so the lower applies: the ceiling is disabled only because no"
        " personal policy file was read (personal-policy-missing); once the operator's file is"
        " there, its ceiling applies."
    )
    run = await completed_run(router, root=workspace)
    off = texts(await router.call("remember_workflow", **remember_args(run, workspace)))[-1]
    assert tried(RELATIVE) in off
    assert "the ceiling is disabled only because no personal policy file was read" in off


async def test_a_missing_personal_profile_is_named_with_its_absolute_path(router, options):
    options["router"]["personal_profile"] = "no-such-dir/profile.json"
    plan = await router.plan("Fix the typo")
    assert plan["profile_warnings"] == [
        f"personal-profile-absent: {tried('no-such-dir/profile.json')} directory) is not there"
    ]
