"""At 2026-07-28 a tool asks its client through the call's answer (multi round-trip requests).

That revision has no server-to-client request: a handler's `ClientChannel.request` answers the
call ``resultType: "input_required"`` with the request under ``inputRequests``, and the client
calls again with its result in ``inputResponses``. The capabilities a handler sees are the ones
the request declares in ``_meta``. Shown with the conformance fixture that asks for sampling.
"""

from __future__ import annotations

import trio

from agora.config import Config
from agora.mcp.session import META_CAPABILITIES, META_VERSION
from agora.server.embed import open_server

TOOL = "test_sampling"
META = {META_VERSION: "2026-07-28", META_CAPABILITIES: {"sampling": {}}}
ANSWER = {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "m"}


async def test_a_modern_call_asks_its_client_in_its_answer_and_reads_the_retry():
    config = Config(port=0, db=":memory:", conformance=True, toolsets=["conformance"])
    async with open_server(config, listen=False) as server, server.client("/mcp") as client:
        params = {"name": TOOL, "arguments": {"prompt": "question?"}, "_meta": META}
        with trio.fail_after(30):
            first = await client.request("tools/call", params)
            asked = first["result"]
            assert asked["resultType"] == "input_required", first
            ((key, request),) = asked["inputRequests"].items()
            assert request["method"] == "sampling/createMessage"
            assert request["params"]["messages"][0]["content"]["text"] == "question?"
            again = await client.request("tools/call", params | {"inputResponses": {key: ANSWER}})
        result = again["result"]
        assert result["resultType"] == "complete"
        assert result["content"][0]["text"] == "LLM response: forty-two"
        # Nothing was sent to the client as a request of the server's own.
        assert not [n for n in client.notifications if "id" in n]
