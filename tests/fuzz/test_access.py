"""Access: another principal's entity answers exactly as a missing one, for every scoped tool.

One real ``agora serve`` with every toolset, reached by the official ``mcp`` SDK over
Streamable HTTP with bearer tokens. The catalog (``tools/list``) must be exactly the tools
`access_catalog` classifies: scoped (the rule each enforces) or public (why not). Alice
(`access_alice`) makes an entity of every kind and calls every scoped tool on one; each
call is a template. Bob (of her project) and Olga (of another) replay each template that
names one of her ids twice: with her ids (a foreign entity) and with them changed in their
last hex digits (a missing entity of the same shape); as sent, with her names in the
router's ``context`` changed to theirs, with every role changed to one no topic declares,
and with her debate sessions changed to one of theirs. The two whole answers (isError,
structuredContent, content text; or the JSON-RPC error) must be identical once the ids
supplied are blanked; every scoped tool must have been compared so. The debate inbox
resource of each of her sessions reads as a missing session's. Bob then plays her scenario
on his own entities, and before each of his calls makes it with one of his ids replaced by
the matching one of hers (her message in his topic, her observation under his run) and by
a missing one: the same comparison. (Refusals by role: `test_access_roles`.)
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
import trio
from access_alice import Recorder, alice, memory, memory_calls
from access_catalog import EMPTY_MEMORY, PUBLIC, SCOPED
from access_world import answer, blank, catalog, missing_id, read_answer, sdk_client

from agora.toolsets.debate.rules import INBOX_URI

if TYPE_CHECKING:
    from mcp import Client

# The SDK's Streamable HTTP client leaves its SSE iterators to Trio's GC hook (see e2e).
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

#: Every id an entity of the four toolsets has: prefixed hex ids and UUIDs, wherever they
#: sit in a string (a proposal id holds its run's id, a comparison_ref two run ids).
ID = re.compile(
    r"(?:chl|card|run|graph|proposal|eval|export|observation|feedback)[-:][0-9a-f]{12,}"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)
#: Who tries Alice's entities: a principal of her project, one of another project, and a
#: caller without a token.
STRANGERS = ("bob", "olga", "anonymous")
#: A role no topic of the test declares.
OUTSIDER = "OUTSIDER"


def _ids(value: Any) -> set[str]:
    return set(ID.findall(json.dumps(value)))


def _swap(value: Any, swap: dict[str, str]) -> Any:
    text = json.dumps(value)
    for old, new in swap.items():
        text = text.replace(old, new)
    return json.loads(text)


def _variants(
    args: dict[str, Any], sessions: set[str], own: str, name: str
) -> list[dict[str, Any]]:
    """How a stranger tries Alice's call: as she sent it; with her names changed to theirs
    (the router's ``context``); with every role it names changed to one no topic declares;
    with her sessions changed to one of theirs; and (Bob, of her project, the stranger who
    gets furthest) with each other argument changed in turn: a check that runs between the
    lookup and the gate would tell them apart."""
    tries = [args, _swap(args, {'"alice': f'"{name}'})]
    tries.append({k: OUTSIDER if k.endswith("role") else v for k, v in args.items()})
    tries.append(_swap(args, dict.fromkeys(sessions, own)))
    if name == STRANGERS[0]:
        tries += [{**args, k: _other(v)} for k, v in args.items() if k != "context" and not _ids(v)]
    return [t for n, t in enumerate(tries) if t not in tries[:n]]


def _other(value: Any) -> Any:
    """Another value of the same JSON type (a string no rule accepts, a bigger number)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 97
    if isinstance(value, str):
        return value + "!?"
    if isinstance(value, list):
        return [] if value else ["x"]
    if isinstance(value, dict):
        return {}
    return "x"


async def _compare(
    bob: Client, tool: str, args: dict[str, Any], checked: set[str], own: str = ""
) -> None:
    ids = _ids(args) - {own}
    if not ids:
        return
    swap = {i: missing_id(i) for i in ids}
    foreign = await answer(bob, tool, args)
    missing = await answer(bob, tool, _swap(args, swap))
    assert blank(foreign, ids) == blank(missing, set(swap.values())), (
        f"{tool}: Bob can tell Alice's entity from a missing one:\n"
        f"foreign: {foreign}\nmissing: {missing}"
    )
    checked.add(tool)


async def _compare_inbox(bob: Client, session: str) -> None:
    """The debate inbox resource of Alice's session reads as a missing session's."""
    nowhere = missing_id(session)
    foreign = await read_answer(bob, INBOX_URI.format(session_id=session))
    missing = await read_answer(bob, INBOX_URI.format(session_id=nowhere))
    assert "jsonrpc_error" in foreign, foreign
    assert blank(foreign, {session}) == blank(missing, {nowhere}), (foreign, missing)


async def _listed(client: Client, rec: Recorder) -> tuple[set[str], int]:
    """What the tools that list without naming an entity show ``client``: the ids in the
    caller's sessions, the work queue, and the router status of Alice's context, and that
    status's count of work items."""
    seen: set[str] = set()
    for tool, args in (
        ("debate_session_list", {"limit": 1000}),
        ("debate_work_queue", {"limit": 1000}),
        ("get_router_status", {"context": rec.context, "workflow_run_id": None,
                               "goal_binding_id": None}),
    ):  # fmt: skip
        got = await answer(client, tool, args)
        assert not got.get("isError"), (tool, got)
        seen |= _ids(got)
    return seen, got["structuredContent"]["created_work_items"]


async def test_every_tool_is_classified_scoped_or_public(world):
    with trio.fail_after(60):
        async with sdk_client(world, "bob") as bob:
            listed = await catalog(bob)
    assert len(listed) == len(set(listed)), listed
    assert not set(SCOPED) & set(PUBLIC), sorted(set(SCOPED) & set(PUBLIC))
    unclassified = set(listed) - set(SCOPED) - set(PUBLIC)
    assert not unclassified, f"classify these in access_catalog.py: {sorted(unclassified)}"
    gone = (set(SCOPED) | set(PUBLIC)) - set(listed)
    assert not gone, f"no longer served: {sorted(gone)}"


async def test_a_foreign_entity_answers_like_a_missing_one(world):
    checked: set[str] = set()
    with trio.fail_after(120):
        async with sdk_client(world, "alice") as client:
            rec = Recorder(client)
            await alice(rec, world.workspace)
            for session in rec.sessions:  # she reads her own inboxes
                mine = await read_answer(client, INBOX_URI.format(session_id=session))
                assert "contents" in mine, mine
            hers = set().union(*(_ids(args) for _tool, args in rec.templates))
            listed, items = await _listed(client, rec)
            assert rec.sessions <= listed, listed  # she sees hers
            assert items > 0
        for stranger in STRANGERS:
            async with sdk_client(world, stranger) as bob:
                own = await Recorder(bob).session()
                for tool, args in rec.templates:
                    for bob_args in _variants(args, rec.sessions, own, stranger):
                        await _compare(bob, tool, bob_args, checked, own)
                for session in sorted(rec.sessions):
                    await _compare_inbox(bob, session)
                listed, items = await _listed(bob, rec)
                assert not listed & hers, (stranger, listed & hers)
                assert items == 0, stranger
    assert checked <= set(SCOPED), sorted(checked - set(SCOPED))
    by_id = set(SCOPED) - EMPTY_MEMORY  # the others: test_a_strangers_memory_answers_...
    assert checked == by_id, f"never compared: {sorted(by_id - checked)}"


class Probe:
    """Before each of Bob's own calls: the same call with one of his ids replaced by the
    matching id of Alice's (from her call of that tool made as often before) and by a
    missing one. Made in the state where his own call then succeeds."""

    def __init__(self, bob: Client, hers: list[tuple[str, dict[str, Any]]]) -> None:
        self.bob = bob
        self.hers: dict[str, list[dict[str, Any]]] = {}
        for tool, args in hers:
            self.hers.setdefault(tool, []).append(args)
        self.seen: dict[str, int] = {}
        self.checked: set[str] = set()

    async def __call__(self, tool: str, args: dict[str, Any]) -> None:
        n = self.seen.get(tool, 0)
        self.seen[tool] = n + 1
        if n >= len(self.hers.get(tool, [])):
            return
        hers, his = ID.findall(json.dumps(self.hers[tool][n])), ID.findall(json.dumps(args))
        if len(hers) != len(his):
            return
        links: dict[str, set[str]] = {}
        for a, b in zip(hers, his, strict=True):
            links.setdefault(b, set()).add(a)
        for own_id, matching in links.items():
            her_id = matching.pop()
            if matching or her_id == own_id:
                continue
            nowhere = missing_id(her_id)
            foreign = await answer(self.bob, tool, _swap(args, {own_id: her_id}))
            missing = await answer(self.bob, tool, _swap(args, {own_id: nowhere}))
            assert blank(foreign, {her_id}) == blank(missing, {nowhere}), (
                f"{tool}: her {her_id} in place of his {own_id}:\n"
                f"foreign: {foreign}\nmissing: {missing}"
            )
            self.checked.add(tool)


async def test_one_of_her_ids_in_a_strangers_own_call_answers_as_a_missing_one(world):
    """Bob plays Alice's scenario on his own entities; before each of his calls, the same
    call with one of his ids replaced by hers (her message in his topic, her observation
    under his run, her evaluation run beside his) answers as with a missing id."""
    with trio.fail_after(120):
        async with sdk_client(world, "alice") as a, sdk_client(world, "bob") as b:
            rec = Recorder(a)
            await alice(rec, world.workspace)
            probe = Probe(b, rec.templates)
            await alice(Recorder(b, conductor=False, before=probe), world.workspace)
    never = set(SCOPED) - probe.checked - CONDUCTOR_STEPS - EMPTY_MEMORY
    assert not never, f"never compared: {sorted(never)}"


#: The scenario's steps a stranger without the conductor scope leaves out.
CONDUCTOR_STEPS = {
    "debate_add_role",
    "debate_protocol_maintain",
    "debate_judge_prepare",
    "debate_judge_verdict",
}


#: Strangers whose Memory nothing of the access tests writes (so it is empty): a principal
#: of Alice's project, one of another, and a caller without a token.
EMPTY_STRANGERS = ("dave", "olga", "anonymous")


async def _memory_answers(world, name: str, key: str) -> list[dict[str, Any]]:
    """``name``'s whole answers to the six Memory calls (`memory_calls`), the purge bound to
    the digest its own status just answered."""
    async with sdk_client(world, name) as client:
        status = await answer(client, *memory_calls(name, world.workspace, "", key)[0])
        own = status["structuredContent"]["history_summary_digest"]
        return [
            await answer(client, tool, args)
            for tool, args in memory_calls(name, world.workspace, own, key)
        ]


async def test_a_strangers_memory_answers_like_an_empty_one(world):
    """The Memory tools name no entity of Alice's (`EMPTY_MEMORY`), so a foreign entity and a
    missing one cannot be told apart by id. Instead: each stranger's whole answers to the
    six calls (status, candidates, preview, transition, rollback, purge of everything, each
    on their own context) are identical before and after Alice records a workflow and its
    feedback in her Memory, while her own status changes; the strangers' purges delete
    nothing (of hers or anyone's) and leave her status as it was."""
    status_of = memory_calls("alice", world.workspace, "", "status")[0]
    with trio.fail_after(120):
        before = {name: await _memory_answers(world, name, "before") for name in EMPTY_STRANGERS}
        async with sdk_client(world, "alice") as client:
            empty = (await answer(client, *status_of))["structuredContent"]
            await memory(Recorder(client), world.workspace)
            hers = (await answer(client, *status_of))["structuredContent"]
            assert hers["eligible_workflow_count"] == empty["eligible_workflow_count"] + 1
            for name in EMPTY_STRANGERS:
                after = await _memory_answers(world, name, "after")
                assert after == before[name], (name, before[name], after)
                purged = after[-1]["structuredContent"]
                assert (purged["deleted_observations"], purged["deleted_feedback"]) == (0, 0)
            assert (await answer(client, *status_of))["structuredContent"] == hers
    assert {tool for tool, _ in memory_calls("x", world.workspace, "", "x")} == EMPTY_MEMORY
