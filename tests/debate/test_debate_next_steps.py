"""A debate/v1 run end to end as each participant's own MCP client sees it: the official SDK
over Streamable HTTP on loopback, one bearer token per principal, a real SQLite file.

A tester who followed only what the server said was never told that the AB and BA verdicts
must carry the same decision text, and judged "PRO wins: consistent rendering" then "PRO wins
because ...": a split, STALEMATE for good. A blind CLAIM posted with debate_post was committed,
but its reply advised posting it again with debate_post_with_recipients, which is refused.
The replies of debate_init, debate_bind_role, debate_judge_prepare and debate_judge_verdict
said nothing of what comes next, a judge's wait still said the conductor would prepare the
projections once they existed, and the DEBATE advice named VERIFY without its reply_to and
payload.result. Each reply now says what to do next, and what it says holds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

import pytest
import trio

from agora.config import Config, PrincipalConfig
from agora.server.embed import open_server

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 30
LANE = json.dumps({"priority_lane": "P2", "priority_reason": "next steps"})
#: One principal per participant: the blind pair and the judge must not share one.
NAMES = ("cora", "pro", "con", "judge")


def _principal(name: str) -> PrincipalConfig:
    digest = hashlib.sha256(f"token-{name}".encode()).hexdigest()
    scopes = ["conductor"] if name == "cora" else []
    return PrincipalConfig(name, digest, scopes, ["local"])


@pytest.fixture
async def url(tmp_path):
    config = Config(
        port=0, db=str(tmp_path / "steps.db"), principals=[_principal(n) for n in NAMES]
    )
    async with open_server(config) as server:
        yield server.url + "/mcp/debate"


class Seat:
    """One participant's SDK client, and the calls it makes."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def call(self, tool: str, **args: Any) -> tuple[dict[str, Any], list[str]]:
        """The structured result of a call that must succeed, and the lines of its text
        blocks after the JSON copy."""
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, result
        lines = [line for block in result.content[1:] for line in block.text.split("\n")]
        return result.structured_content, lines

    async def refused(self, tool: str, **args: Any) -> dict[str, Any]:
        """The error body of a call that must fail."""
        result = await self.client.call_tool(tool, args)
        assert result.is_error, result
        out: dict[str, Any] = result.structured_content
        return out


async def _seat(stack: Any, url: str, name: str) -> Seat:
    headers = {"Authorization": f"Bearer token-{name}"}
    http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
    transport = streamable_http_client(url, http_client=http)
    client = mcp.Client(transport, read_timeout_seconds=TIMEOUT)
    return Seat(await stack.enter_async_context(client))


def _says(kind: str, role: str, **extra: Any) -> dict[str, Any]:
    text = {"summary": f"{role} {kind}", "assumptions": [], "evidence_refs": [], **extra}
    return {"role": role, "priority": "M", "kind": kind, "body": kind,
            "payload_json": json.dumps(text)}  # fmt: skip


async def _debate(url: str) -> dict[str, Any]:
    """One debate/v1 run from debate_init to STOPPED; what each step answered, by name."""
    seen: dict[str, Any] = {}
    with trio.fail_after(TIMEOUT):
        async with contextlib.AsyncExitStack() as stack:
            cora, pro, con, judge = [await _seat(stack, url, n) for n in NAMES]
            seen["told"] = " ".join((cora.client.instructions or "").split())
            seen["tools"] = {t.name: t for t in (await cora.client.list_tools()).tools}
            roles = [{"role": "MOD"}] + [
                {"role": r, "session_id": None} for r in ("PRO", "CON", "JUDGE")
            ]
            init, seen["init"] = await cora.call(
                "debate_init", title="t", created_by_role="MOD", roles_json=json.dumps(roles),
                metadata_json=LANE, protocol_version="debate/v1", blind_roles_csv="PRO,CON",
                max_rounds=1,
            )  # fmt: skip
            seen["topic_state"] = init["topic_id"], init["state"]
            topic = init["topic_id"]
            seats = seen["seats"] = {"MOD": init["seeded_bindings"][0]["session_id"]}
            for seat, role in ((pro, "PRO"), (con, "CON"), (judge, "JUDGE")):
                seats[role] = (await seat.call("debate_session_open"))[0]["session_id"]
                _, seen[f"bound {role}"] = await seat.call(
                    "debate_bind_role", topic_id=topic, role=role, session_id=seats[role]
                )
            await cora.call("debate_state", topic_id=topic, role="MOD", new_state="ACTIVE")
            claim, seen["claim"] = await pro.call(
                "debate_post", topic_id=topic, **_says("CLAIM", "PRO")
            )
            seen["claim_id"] = claim["msg_id"]
            seen["again"] = await pro.refused(
                "debate_post_with_recipients", topic_id=topic, addressed_to_csv="CON,MOD",
                **_says("CLAIM", "PRO"),
            )  # fmt: skip
            con_claim, seen["debate"] = await con.call(
                "debate_post_with_recipients", topic_id=topic, addressed_to_csv="PRO,MOD",
                **_says("CLAIM", "CON"),
            )  # fmt: skip
            read, _ = await con.call("debate_read", topic_id=topic, role="CON")
            seen["read"] = [m["msg_id"] for m in read["messages"]]
            _, seen["verify"] = await cora.call(
                "debate_post_with_recipients", topic_id=topic, addressed_to_csv="PRO,CON,JUDGE",
                reply_to=claim["msg_id"], **_says("VERIFY", "MOD", result="verified"),
            )  # fmt: skip
            prepared, seen["prepare"] = await cora.call(
                "debate_judge_prepare", topic_id=topic, left_msg_id=claim["msg_id"],
                right_msg_id=con_claim["msg_id"],
            )  # fmt: skip
            inbox = {"topic_id": topic, "role": "JUDGE", "session_id": seats["JUDGE"]}
            _, seen["wait"] = await judge.call("debate_signal_wait", timeout_ms=1000, **inbox)
            ab, ba = seen["ab_ba"] = [p["projection_id"] for p in prepared["projections"]]
            verdict = json.dumps({"winner_msg_id": claim["msg_id"], "decision": "PRO wins"})
            seen["first"] = await judge.call(
                "debate_judge_verdict", projection_id=ab, judge_role="JUDGE", verdict_json=verdict
            )
            seen["second"] = await judge.call(
                "debate_judge_verdict", projection_id=ba, judge_role="JUDGE", verdict_json=verdict
            )
    return seen


#: What the judge must be told before its first verdict.
SAME = 'Both verdicts carry the same decision, word for word (e.g. "PRO wins"'


async def test_a_judge_is_told_to_repeat_the_decision_word_for_word(url):
    seen = await _debate(url)
    ba = seen["ab_ba"][1]
    (first, first_text), (second, second_text) = seen["first"], seen["second"]
    assert 'the same decision, word for word (e.g. "PRO wins")' in seen["told"]
    tool = seen["tools"]["debate_judge_verdict"]
    assert "must carry the same decision, word for word" in tool.description
    described = tool.input_schema["properties"]["verdict_json"]["description"]
    assert "repeats the first one's decision word for word" in described
    assert SAME in seen["verify"][-1]  # the ADJUDICATE step, before any projection
    assert (first["complete"], second["stable"]) == (False, True)
    assert first_text == [
        f"Verdict recorded on the AB projection. Still to judge: the BA projection {ba}, with"
        ' debate_judge_verdict as JUDGE, repeating this decision word for word: "PRO wins".'
        " The verdicts agree only when winner_msg_id and decision are both equal, and a split"
        " ends the debate in STALEMATE (judge_order_swap_disagreement) for good."
    ]
    assert second["protocol_state"]["phase"] == "STOPPED"
    assert second_text[0].startswith("The debate is STOPPED: the judges agreed")


async def test_a_broadcast_blind_claim_is_told_it_is_committed(url):
    seen = await _debate(url)
    claim, again = seen["claim"], seen["again"]
    assert claim[0].startswith(
        "This CLAIM was broadcast: it is in no inbox, but it is committed as PRO's blind CLAIM"
        " and cannot be posted again"
    )
    assert not any("naming them in addressed_to_csv" in line for line in claim)
    assert "Post the CLAIM with debate_post_with_recipients" in claim[1]
    assert "post the blind CLAIM with debate_post_with_recipients as well" in seen["told"]
    assert again["error"] == "blind_claim_duplicate"
    assert f"PRO already committed its blind CLAIM ({seen['claim_id']})" in again["message"]
    assert "cannot be posted again" in again["message"]
    assert seen["claim_id"] in seen["read"]  # what the reply says of debate_read holds


async def test_init_bind_prepare_and_the_judges_wait_say_what_comes_next(url):
    seen = await _debate(url)
    ab, ba = seen["ab_ba"]
    assert seen["topic_state"][1] == "INIT"
    assert seen["init"][-1].startswith("Next: the topic is INIT and takes no posts")
    assert "debate_state (new_state ACTIVE)" in seen["init"][-1]
    session = seen["seats"]["JUDGE"]
    bound, step = seen["bound JUDGE"]
    assert bound.startswith(f"JUDGE is bound to session {session}: debate_signal_wait")
    assert step.startswith("Next: the topic is INIT")
    for text in (seen["prepare"][0], seen["wait"][-1]):
        assert f"still to judge: AB {ab} and BA {ba}." in text
        assert "The conductor calls debate_judge_prepare" not in text
        assert SAME in text


async def test_the_debate_step_says_what_a_verify_needs(url):
    seen = await _debate(url)
    assert (
        "closes the round with a VERIFY: reply_to a CLAIM, CONCEDE, EVIDENCE or REBUT message,"
        " and payload.result verified, contested, unsupported or unknown"
    ) in seen["debate"][0]
