"""remember_workflow for a run planned under a root only the MCP client's roots authorize.

Tester findings (the official SDK's stdio client, its roots the only authorization):
remember_workflow with ``workspace_root`` null judged the run's planned root without asking
the client's roots, and told the agent that its authorized workspace was not and to plan the
work again; under another root, the Memory policy was checked first, and the agent was sent
to authorize a directory or create a request file in a workspace the run never belonged to.
docs/router.md: any other ``workspace_root``, null included, is ``workflow-context-mismatch``
naming the root the run was planned under.
"""

from __future__ import annotations

import pytest
from memory_support import completed_run, remember_args
from test_router_profiles import Roots


@pytest.fixture
def client_workspace(workspace, options, router):
    """`workspace`, authorized by the client's roots only (no workspace_roots)."""
    options["router"]["workspace_roots"] = []
    router.client = Roots(workspace)
    return workspace


def sent_back(refused, root):
    assert refused["code"] == "workflow-context-mismatch", refused
    assert f'planned in the workspace_root "{root}"' in refused["message"]
    assert refused["message"].endswith("send that workspace_root")
    assert "plan the work again" not in refused["message"]


async def test_null_root_names_the_client_authorized_root_it_was_planned_under(
    router, client_workspace
):
    run = await completed_run(router, root=client_workspace)
    refused = await router.refused(
        "remember_workflow", **remember_args(run, "x", workspace_root=None)
    )
    sent_back(refused, client_workspace)
    recorded = await router.call("remember_workflow", **remember_args(run, client_workspace))
    assert recorded["status"] == "recorded"


async def test_another_root_is_a_mismatch_before_the_memory_policy(
    router, client_workspace, tmp_path, options
):
    run = await completed_run(router, root=client_workspace)
    other = tmp_path / "other"  # no Memory request file: the policy would say memory-disabled
    other.mkdir()
    unauthorized = await router.refused("remember_workflow", **remember_args(run, other))
    sent_back(unauthorized, client_workspace)
    options["router"]["workspace_roots"] = [str(tmp_path)]  # now authorized, still not the run's
    authorized = await router.refused("remember_workflow", **remember_args(run, other))
    sent_back(authorized, client_workspace)


class NoRoots:
    """An MCP client channel that declares no roots capability (another host, a reconnect)."""

    def __init__(self):
        self.capabilities = {}


async def test_null_root_from_a_client_without_roots_says_what_the_root_says(
    router, client_workspace, options
):
    """Tester finding (C): a client without the roots capability, remember_workflow with
    workspace_root null for a run planned under client roots, was told "cannot be
    remembered: plan the work again", while the same call with the root said to add it to
    workspace_roots: the root is judged when the call is made, so authorizing it works."""
    run = await completed_run(router, root=client_workspace)
    router.client = NoRoots()
    refused = await router.refused(
        "remember_workflow", **remember_args(run, "x", workspace_root=None)
    )
    assert refused["code"] == "workflow-context-mismatch", refused
    message = refused["message"]
    assert "plan the work again" not in message
    assert "cannot be remembered" not in message
    assert "client-roots-unused: the MCP client declared no roots capability; add the" in message
    assert "to [options.router] workspace_roots" in message
    assert message.endswith(
        f'once it is authorized and exists, send workspace_root "{client_workspace}"'
    )
    with_root = await router.call("remember_workflow", **remember_args(run, client_workspace))
    assert with_root["status"] == "memory-disabled"
    options["router"]["workspace_roots"] = [str(client_workspace)]  # as the message says
    recorded = await router.call("remember_workflow", **remember_args(run, client_workspace))
    assert recorded["status"] == "recorded"
