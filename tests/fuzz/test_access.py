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
a missing one: the same comparison. Last, a debater seated on a topic calls the
conductor-only tools there and gets the contract's refusal, changing nothing.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
import trio
from access_alice import LANE as LANE_P3
from access_alice import Recorder, adjudicate, alice
from access_catalog import PUBLIC, SCOPED
from access_world import World, answer, catalog, read_answer, sdk_client

from agora.toolsets.debate.rules import INBOX_URI

if TYPE_CHECKING:
    from collections.abc import Iterator

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


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    started = World.start(tmp_path_factory.mktemp("access"))
    try:
        yield started
    finally:
        started.stop()


def _ids(value: Any) -> set[str]:
    return set(ID.findall(json.dumps(value)))


def _missing(entity_id: str) -> str:
    """The same id with its last eight hex digits changed (same pattern, no such entity)."""
    head, tail = entity_id[:-8], entity_id[-8:]
    return head + "".join("0123456789abcdef"[(int(c, 16) + 7) % 16] for c in tail)


def _swap(value: Any, swap: dict[str, str]) -> Any:
    text = json.dumps(value)
    for old, new in swap.items():
        text = text.replace(old, new)
    return json.loads(text)


def _blank(reply: dict[str, Any], ids: set[str]) -> str:
    text = json.dumps(reply, sort_keys=True)
    for entity_id in sorted(ids, key=len, reverse=True):
        text = text.replace(entity_id, "<id>")
    return text


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
    swap = {i: _missing(i) for i in ids}
    foreign = await answer(bob, tool, args)
    missing = await answer(bob, tool, _swap(args, swap))
    assert _blank(foreign, ids) == _blank(missing, set(swap.values())), (
        f"{tool}: Bob can tell Alice's entity from a missing one:\n"
        f"foreign: {foreign}\nmissing: {missing}"
    )
    checked.add(tool)


async def _compare_inbox(bob: Client, session: str) -> None:
    """The debate inbox resource of Alice's session reads as a missing session's."""
    nowhere = _missing(session)
    foreign = await read_answer(bob, INBOX_URI.format(session_id=session))
    missing = await read_answer(bob, INBOX_URI.format(session_id=nowhere))
    assert "jsonrpc_error" in foreign, foreign
    assert _blank(foreign, {session}) == _blank(missing, {nowhere}), (foreign, missing)


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
    assert checked == set(SCOPED), f"never compared: {sorted(set(SCOPED) - checked)}"


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
            nowhere = _missing(her_id)
            foreign = await answer(self.bob, tool, _swap(args, {own_id: her_id}))
            missing = await answer(self.bob, tool, _swap(args, {own_id: nowhere}))
            assert _blank(foreign, {her_id}) == _blank(missing, {nowhere}), (
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
    never = set(SCOPED) - probe.checked - CONDUCTOR_STEPS
    assert not never, f"never compared: {sorted(never)}"


#: The scenario's steps a stranger without the conductor scope leaves out.
CONDUCTOR_STEPS = {
    "debate_add_role",
    "debate_protocol_maintain",
    "debate_judge_prepare",
    "debate_judge_verdict",
}


#: What a debater seated on a topic gets from each conductor-only call there (seed 003):
#: (tool, arguments beyond topic_id, the error, whether a missing topic answers the same).
CONDUCTOR_ONLY = [
    # "Conductor callers only" ... "rejected uniformly": the not-found shape.
    ("debate_judge_prepare", {"left_msg_id": "<pro>", "right_msg_id": "<con>"},
     "unknown_topic", True),
    # "callers without conductor or star scope are rejected uniformly".
    ("debate_add_role", {"role": "EXECUTOR_1", "session_id": "<own>"}, "unknown_topic", True),
    # "the caller must hold the conductor role": a CONDUCTOR binding he does not own.
    ("debate_set_lane", {"role": "CONDUCTOR", "lane": "P0", "reason": "mine"},
     "unknown_topic", True),
    # "the role argument must read CONDUCTOR": the first gate, before the topic.
    ("debate_set_lane", {"role": "PRO", "lane": "P0", "reason": "mine"},
     "conductor_role_required", True),
    # Lifecycle authority is the owned binding: "Unowned roles deny as not-found".
    ("debate_state", {"role": "CONDUCTOR", "new_state": "RESOLVED"}, "unknown_topic", True),
    ("debate_close_topic", {"role": "CONDUCTOR", "new_state": "RESOLVED"}, "unknown_topic", True),
    # "Conductor callers only. All other principals ... are denied".
    ("debate_reconcile_project", {"project": "mine"}, "reconcile_rejected", True),
    # The override "cites the sanctioning CONDUCTOR decision": conductor or star only.
    ("debate_bind_role", {"role": "CONDUCTOR", "session_id": "<own>",
                          "conductor_override_msg_id": "<pro>", "replace_active": True},
     "invalid_override", False),
]  # fmt: skip


def _fill(args: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    return {k: values.get(v, v) if isinstance(v, str) else v for k, v in args.items()}


async def _seated(conductor: Recorder, debater: Recorder) -> tuple[str, str]:
    """A debate/v1 topic of Alice's in ADJUDICATE where Dave holds PRO: (topic, his session)."""
    seats = {role: await conductor.session() for role in ("CONDUCTOR", "CON", "JUDGE")}
    roster = [{"role": r, "session_id": seats.get(r)} for r in ("CONDUCTOR", "PRO", "CON", "JUDGE")]
    init = await conductor.call(
        "debate_init", title="seated", created_by_role="CONDUCTOR",
        roles_json=json.dumps(roster), metadata_json=LANE_P3, protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
    )  # fmt: skip
    topic = str(init["topic_id"])
    own = await debater.session()
    await debater.call("debate_bind_role", topic_id=topic, role="PRO", session_id=own)
    await conductor.call("debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE")
    return topic, own


async def _refused(client: Client, tool: str, args: dict[str, Any], code: str) -> dict[str, Any]:
    """A refusal in the debate's vocabulary: exactly {ok, error, message}, mirrored as text."""
    got = await answer(client, tool, args)
    assert got.get("isError") is True, (tool, got)
    body = got["structuredContent"]
    assert (set(body), body["ok"], body["error"]) == ({"ok", "error", "message"}, False, code), (
        tool,
        got,
    )
    assert json.loads(got["content"][0]["text"]) == body
    return got


async def test_a_debater_calling_a_conductor_tool_gets_the_contracts_refusal(world):
    with trio.fail_after(120):
        async with sdk_client(world, "alice") as a, sdk_client(world, "dave") as d:
            conductor, debater = Recorder(a), Recorder(d)
            topic, own = await _seated(conductor, debater)
            pro, con = await adjudicate(conductor, topic, pro=debater)
            values = {"<pro>": pro, "<con>": con, "<own>": own}
            before = await _topic_view(a, topic)
            for tool, extra, code, uniform in CONDUCTOR_ONLY:
                args = {"topic_id": topic, **_fill(extra, values)}
                got = await _refused(d, tool, args, code)
                if uniform:  # nothing tells the debater more than a missing topic would
                    nowhere = _missing(topic)
                    missing = await answer(d, tool, {**args, "topic_id": nowhere})
                    assert _blank(got, {topic}) == _blank(missing, {nowhere}), (tool, missing)
            await _refused(d, "debate_protocol_maintain", {"topic_ids_csv": topic},
                           "conductor_required")  # fmt: skip
            assert await _topic_view(a, topic) == before  # the refusals changed nothing
            prepared = await conductor.call(
                "debate_judge_prepare", topic_id=topic, left_msg_id=pro, right_msg_id=con
            )
            verdict = {
                "projection_id": prepared["projections"][0]["projection_id"],
                "verdict_json": json.dumps({"winner_msg_id": pro, "decision": "adopt"}),
            }
            # The JUDGE seat is Alice's; his own PRO seat is blind: "ineligible judges".
            await _refused(d, "debate_judge_verdict", {**verdict, "judge_role": "JUDGE"},
                           "unknown_topic")  # fmt: skip
            await _refused(d, "debate_judge_verdict", {**verdict, "judge_role": "PRO"},
                           "ineligible_judge")  # fmt: skip
            assert (await _topic_view(a, topic))["phase"] == "ADJUDICATE"
            await conductor.call(
                "debate_set_lane", topic_id=topic, role="CONDUCTOR", lane="P1", reason="mine"
            )


async def _topic_view(client: Client, topic: str) -> dict[str, Any]:
    """The conductor's view of the topic: protocol state, bindings, transcript size."""
    state = await answer(client, "debate_protocol_state", {"topic_id": topic})
    bindings = await answer(client, "debate_list_bindings", {"topic_id": topic})
    read = await answer(client, "debate_read", {"topic_id": topic, "role": "CONDUCTOR"})
    return {
        "phase": state["structuredContent"]["phase"],
        "state": state["structuredContent"],
        "bindings": bindings["structuredContent"],
        "count": read["structuredContent"]["count"],
    }
