"""What an agent author learns from the debate endpoint itself, with the official MCP SDK as
the client over Streamable HTTP on loopback, against a server on a real SQLite file.

Agents that followed the endpoint's ``instructions`` posted with ``debate_post``, which
reaches no inbox, and waited until the phase clock ended their debate in STALEMATE; the
instructions also said a session must come first, when ``debate_init`` mints them. The
instructions and the tool descriptions must say how a post reaches its recipients, and what
they say must hold. Replies said where a debate/v1 topic stood but not whose move it was, and
a wait that timed out did not say so: post and wait replies now end with what to do next. A
parked wait whose request has a ``progressToken`` reports progress to the SDK's callback.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.debate.protocol.guide import BROADCAST, next_move

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 30
LANE = json.dumps({"priority_lane": "P2", "priority_reason": "agent guide"})


@pytest.fixture
async def url(tmp_path):
    async with open_server(Config(port=0, db=str(tmp_path / "guide.db"))) as server:
        yield server.url + "/mcp/debate"


async def _call(client: Any, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result
    out: dict[str, Any] = result.structured_content
    return out


async def test_the_instructions_say_how_to_post_so_that_others_receive_it(url):
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(url, read_timeout_seconds=TIMEOUT) as client:
            told = " ".join((client.instructions or "").split())
            tools = {t.name: t.description or "" for t in (await client.list_tools()).tools}
            # What the instructions say holds: a broadcast reaches no inbox, an addressed
            # post does.
            init = await _call(
                client,
                "debate_init",
                title="t",
                created_by_role="PRO",
                roles_json=json.dumps([{"role": "PRO"}, {"role": "CON"}]),
                metadata_json=LANE,
            )
            topic = init["topic_id"]
            seats = {b["role"]: b["session_id"] for b in init["seeded_bindings"]}
            await _call(client, "debate_state", topic_id=topic, role="PRO", new_state="ACTIVE")
            post = {"topic_id": topic, "role": "PRO", "priority": "M", "kind": "INFO"}
            inbox = {"topic_id": topic, "role": "CON", "session_id": seats["CON"]}
            broadcast = await client.call_tool("debate_post", {"body": "to everyone", **post})
            assert (await _call(client, "debate_signal_check", **inbox))["count"] == 0
            sent = await _call(
                client, "debate_post_with_recipients", body="to CON", addressed_to_csv="CON", **post
            )
            got = await _call(client, "debate_signal_check", **inbox)
    assert [m["msg_id"] for m in got["pending"]] == [sent["msg_id"]]
    # The broadcast's reply says so, and how a post reaches its recipients.
    assert [b.text for b in broadcast.content[1:]] == [BROADCAST]
    assert "debate_post_with_recipients, naming them in addressed_to_csv" in BROADCAST
    assert "post with debate_post_with_recipients, naming in addressed_to_csv" in told
    assert "post with debate_post," not in told
    assert "a debate_post is a broadcast that reaches no inbox" in told
    assert "A broadcast reaches no inbox" in tools["debate_post"]
    assert "debate_post broadcast never wakes a wait" in tools["debate_signal_wait"]
    assert "debate_post broadcast reaches no inbox" in tools["debate_post_with_recipients"]


async def test_the_instructions_are_true_for_a_topic_opened_without_a_session(url):
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(url, read_timeout_seconds=TIMEOUT) as client:
            told = " ".join((client.instructions or "").split())
            session = (await _call(client, "debate_session_open"))["session_id"]
            roles = [{"role": "PRO", "session_id": session}, {"role": "CON"}]
            init = await _call(
                client,
                "debate_init",
                title="t",
                created_by_role="PRO",
                roles_json=json.dumps(roles),
                metadata_json=LANE,
            )
            refused = await client.call_tool(
                "debate_init",
                {"title": "t", "created_by_role": "PRO", "metadata_json": LANE,
                 "session_id": session},
            )  # fmt: skip
    seeded = {b["role"]: b for b in init["seeded_bindings"]}
    assert seeded["PRO"]["session_id"] == session
    assert seeded["CON"]["minted"] is True  # no session_open needed for it
    assert refused.is_error
    assert refused.structured_content["error"] == "invalid_arguments"
    assert "every other tool presupposes a session you own" not in told
    assert "it takes no session_id argument" in told
    assert "omits session_id to have one minted for you" in told
    assert "seeded_bindings" in told


def _texts(result: Any) -> list[str]:
    """The text blocks after the JSON copy of the structured result."""
    return [block.text for block in result.content[1:]]


async def _v1(client: Any) -> tuple[str, dict[str, str]]:
    """An ACTIVE debate/v1 topic of one round: blind PRO and CON, and MOD, who verifies."""
    init = await _call(
        client,
        "debate_init",
        title="t",
        created_by_role="MOD",
        roles_json=json.dumps([{"role": "MOD"}, {"role": "PRO"}, {"role": "CON"}]),
        metadata_json=LANE,
        protocol_version="debate/v1",
        blind_roles_csv="PRO,CON",
        max_rounds=1,
    )
    topic = init["topic_id"]
    await _call(client, "debate_state", topic_id=topic, role="MOD", new_state="ACTIVE")
    return topic, {b["role"]: b["session_id"] for b in init["seeded_bindings"]}


async def test_post_and_wait_replies_say_what_to_do_next(url):
    def says(role: str, kind: str, to: str, **extra: Any) -> dict[str, Any]:
        text = {"summary": f"{role} {kind}", "assumptions": [], "evidence_refs": [], **extra}
        return {"topic_id": topic, "role": role, "priority": "M", "kind": kind, "body": kind,
                "addressed_to_csv": to, "payload_json": json.dumps(text)}  # fmt: skip

    def inbox(role: str, timeout_ms: int = 1000) -> dict[str, Any]:
        return {"topic_id": topic, "role": role, "session_id": seats[role],
                "timeout_ms": timeout_ms}  # fmt: skip

    with trio.fail_after(TIMEOUT):
        async with mcp.Client(url, read_timeout_seconds=TIMEOUT) as client:
            topic, seats = await _v1(client)
            idle = await client.call_tool("debate_signal_wait", inbox("PRO"))
            pro = await client.call_tool("debate_post_with_recipients", says("PRO", "CLAIM", "CON"))
            con = await client.call_tool("debate_post_with_recipients", says("CON", "CLAIM", "PRO"))
            got = await client.call_tool("debate_signal_wait", inbox("CON", 10_000))
            again = await client.call_tool("debate_signal_wait", inbox("CON", 10_000))
            claim = pro.structured_content["msg_id"]
            verify = await client.call_tool(
                "debate_post_with_recipients",
                {**says("MOD", "VERIFY", "PRO,CON", result="contested"), "reply_to": claim},
            )
            stalemate = await client.call_tool("debate_signal_wait", inbox("PRO", 10_000))
    assert idle.structured_content["timed_out"] is True
    idle_text, barrier = _texts(idle)[0].split("\n")
    assert idle_text == (
        "Nothing addressed to you came within timeout_ms: call debate_signal_wait again"
        " (only posts addressed to your role or session reach you, such as a"
        " debate_post_with_recipients naming it; a debate_post reaches no one)."
    )
    assert barrier.startswith("While the blind barrier waits (blind_barrier_state)")
    assert _texts(pro)[0].startswith("Next: BLIND_CLAIM waits for the CLAIM of CON (")
    assert _texts(con)[0].startswith("Next: DEBATE, round 1 of 1: PRO and CON answer each other")
    assert [m["msg_id"] for m in got.structured_content["pending"]] == [claim]
    assert "timed_out" not in got.structured_content
    assert _texts(got) == [
        f"1 message(s) for you: handle them, then call debate_signal_advance with"
        f" last_processed_msg_id {claim}; until your cursor moves past them, every"
        " debate_signal_check and debate_signal_wait answers them again."
    ]
    assert again.structured_content["pending"] == got.structured_content["pending"]
    only = "only DISSENT and ESCALATE are accepted"
    assert f"The protocol is in STALEMATE (round_cap_unresolved): {only}." in _texts(verify)[0]
    assert stalemate.structured_content["protocol_state"]["phase"] == "STALEMATE"
    advice, phase = _texts(stalemate)[0].split("\n")
    assert advice.startswith("2 message(s) for you: handle them, then call debate_signal_advance")
    assert phase.startswith(f"The protocol is in STALEMATE (round_cap_unresolved): {only}.")


@pytest.mark.parametrize(
    ("phase", "says"),
    [
        pytest.param("BLIND_CLAIM", "Next: BLIND_CLAIM waits for the CLAIM of CON (", id="blind"),
        pytest.param("DEBATE", "Next: DEBATE, round 2 of 3: PRO and CON answer", id="debate"),
        pytest.param("ADJUDICATE", "Next: ADJUDICATE takes no semantic posts. The", id="judge"),
        pytest.param(
            "STALEMATE",
            "The protocol is in STALEMATE (phase_timeout:BLIND_CLAIM): only DISSENT and"
            " ESCALATE are accepted.",
            id="stalemate",
        ),
        pytest.param("STOPPED", "The debate is STOPPED: the judges agreed", id="stopped"),
        pytest.param("ESCALATED", "The debate is ESCALATED: it waits for a human", id="escalated"),
    ],
)
def test_every_phase_says_whose_move_it_is(phase, says):
    state = {"phase": phase, "blind_roles": ["PRO", "CON"], "round_no": 2, "max_rounds": 3,
             "stalemate_reason": "phase_timeout:BLIND_CLAIM", "projections": []}  # fmt: skip
    assert next_move(state, ["PRO"]).startswith(says)


async def test_a_parked_wait_reports_progress_to_the_sdk(tmp_path):
    config = Config(
        port=0,
        db=str(tmp_path / "progress.db"),
        options={"debate": {"wait_progress_seconds": 0.5}},
    )
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config) as server,
            mcp.Client(f"{server.url}/mcp/debate", read_timeout_seconds=TIMEOUT) as client,
        ):
            session = (await _call(client, "debate_session_open"))["session_id"]
            init = await _call(
                client,
                "debate_init",
                title="t",
                created_by_role="PRO",
                roles_json=json.dumps([{"role": "PRO", "session_id": session}]),
                metadata_json=LANE,
            )
            args = {"topic_id": init["topic_id"], "role": "PRO", "session_id": session,
                    "timeout_ms": 2000}  # fmt: skip
            out = await client.call_tool("debate_signal_wait", args, progress_callback=progress)
    assert out.structured_content["timed_out"] is True
    assert [(done, total) for done, total, _ in seen] == [(0.5, 2), (1, 2), (1.5, 2)]
    assert seen[0][2] == "waiting for messages addressed to PRO: 0.5 s of 2 s"
