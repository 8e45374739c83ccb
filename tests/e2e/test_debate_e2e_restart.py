"""End to end: a debate survives ``kill -9``. Everything acknowledged before the kill is there
after a restart on the same SQLite file: the topic, its bindings, an addressed message still
waiting for its receipt, and the cursor, which then moves on as if nothing happened."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

import trio
from e2e_config import write_config
from e2e_mcp import check_structured
from e2e_process import AgoraProcess

from agora.client import WsClient, connect

if TYPE_CHECKING:
    from pathlib import Path

TOKEN = "debate-restart-token"


async def call(client: WsClient, tools: dict[str, Any], name: str, **args: Any) -> Any:
    result = await client.call_tool(name, args)
    check_structured(tools[name], result)
    return result["structuredContent"]


async def test_acknowledged_state_survives_kill_9(tmp_path: Path) -> None:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    config = write_config(
        tmp_path, f'[[principals]]\nname = "ada"\ntoken_sha256 = "{digest}"\nprojects = ["ops"]\n'
    )
    args = ("--db", str(tmp_path / "debate.db"), "--toolsets", "debate", "--config", str(config))
    with AgoraProcess(*args) as first:
        url = first.url.replace("http", "ws") + "/mcp/debate"
        with trio.fail_after(30):
            async with connect(url, token=TOKEN) as client:
                tools = {t["name"]: t for t in await client.list_tools()}
                lead = (await call(client, tools, "debate_session_open"))["session_id"]
                peer = (await call(client, tools, "debate_session_open"))["session_id"]
                roles = [{"role": "LEAD", "session_id": lead}, {"role": "PEER", "session_id": peer}]
                topic = (
                    await call(
                        client,
                        tools,
                        "debate_init",
                        title="t",
                        created_by_role="LEAD",
                        roles_json=json.dumps(roles),
                        metadata_json='{"priority_lane": "P1", "priority_reason": "crash test"}',
                    )
                )["topic_id"]
                await call(
                    client,
                    tools,
                    "debate_state",
                    topic_id=topic,
                    role="LEAD",
                    new_state="ACTIVE",
                )
                sent = [
                    await call(
                        client,
                        tools,
                        "debate_post_with_recipients",
                        topic_id=topic,
                        role="LEAD",
                        priority="M",
                        kind="STATUS",
                        body=f"m{i}",
                        addressed_to_csv="PEER",
                    )
                    for i in range(3)
                ]
                await call(
                    client,
                    tools,
                    "debate_signal_advance",
                    topic_id=topic,
                    role="PEER",
                    session_id=peer,
                    last_processed_msg_id=sent[0]["msg_id"],
                )
        first.kill()  # no shutdown: only what was committed survives
    with AgoraProcess(*args) as second:
        url = second.url.replace("http", "ws") + "/mcp/debate"
        with trio.fail_after(30):
            async with connect(url, token=TOKEN) as client:
                tools = {t["name"]: t for t in await client.list_tools()}
                inbox = await call(
                    client,
                    tools,
                    "debate_signal_check",
                    topic_id=topic,
                    role="PEER",
                    session_id=peer,
                )
                assert [m["body"] for m in inbox["pending"]] == ["m1", "m2"]
                done = await call(
                    client,
                    tools,
                    "debate_signal_advance",
                    topic_id=topic,
                    role="PEER",
                    session_id=peer,
                    last_processed_msg_id=sent[2]["msg_id"],
                )
                assert done["last_processed_ts"] == sent[2]["ts"]
                later = await call(
                    client,
                    tools,
                    "debate_post",
                    topic_id=topic,
                    role="LEAD",
                    priority="M",
                    kind="STATUS",
                    body="after the crash",
                )
                assert later["ts"] > sent[2]["ts"]
        second.assert_clean_exit(second.stop())
