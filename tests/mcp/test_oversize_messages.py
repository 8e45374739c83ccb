"""Messages over the size limit: refused with the id of the request they were, when its start
names it, so the client fails that call instead of waiting for an answer.

The id is read from the start of the message only (`jsonrpc.request_id_in`): the top-level
``"id"`` key, skipping strings whole, and giving up where the cut could change what follows.
"""

from __future__ import annotations

import json

import pytest

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc


@pytest.mark.parametrize(
    ("head", "rid"),
    [
        pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"', 7,
                     id="sdk-order"),
        pytest.param(b'{"jsonrpc":"2.0","method":"tools/call","id":"r-1","params":{', "r-1",
                     id="string-id"),
        pytest.param(b'{ "id" : -12 , "method":"x"', -12, id="spaces"),
        pytest.param(b'{"id":"a\\"b}","method":"x"', 'a"b}', id="escaped-quote"),
        pytest.param(b'{"method":"x","params":{"t":"{\\"id\\":3 ["},"id":9,"z":"', 9,
                     id="after-params"),
        pytest.param(b'{"method":"id","params":{"id":5,"body":"xx', None, id="nested-id-only"),
        pytest.param(b'{"method":"x","params":{"t":"cut {\\"id\\":3', None, id="cut-in-string"),
        pytest.param(b'{"id":12', None, id="cut-in-number"),
        pytest.param(b'{"id":1.5,"method":"x"', None, id="float"),
        pytest.param(b'{"id":true,"method":"x"', None, id="boolean"),
        pytest.param(b'{"id":null,"method":"x"', None, id="null"),
        pytest.param(b'[{"id":1,"method":"x"}', None, id="batch"),
        pytest.param(b"\xff\xfe garbage", None, id="not-json"),
    ],
)  # fmt: skip
def test_the_id_is_read_from_the_start_of_the_message(head: bytes, rid):
    assert rpc.request_id_in(head) == rid


def test_decode_refuses_an_oversize_message_with_its_id():
    message = {"jsonrpc": "2.0", "id": 41, "method": "ping", "params": {"pad": "x" * (1 << 20)}}
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(json.dumps(message).encode())
    assert refused.value.code == rpc.INVALID_REQUEST
    assert refused.value.message == rpc.OVERSIZE_MESSAGE
    assert rpc.error_id(refused.value) == 41


def test_the_limit_holds_the_largest_request_a_contract_allows():
    # A debate post at the contract's limits (a 32,768-character body and payload), written
    # with 4-byte characters: every transport must take it whole.
    emoji = "\U0001f600"
    arguments = {"topic_id": "0" * 36, "body": emoji * 32768, "payload_json": emoji * 32768}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "debate_post", "arguments": arguments}}  # fmt: skip
    data = json.dumps(message, ensure_ascii=False).encode()
    assert len(data) > 256 * 1024
    assert isinstance(rpc.decode(data), rpc.Request)
