"""What a message that is not JSON is told: the decoder's words, but plain ones where its own
would mislead (an unpaired surrogate escape, or no message at all, reads as "Input data was
truncated" to msgspec)."""

from __future__ import annotations

import pytest

from agora.errors import ProtocolError
from agora.mcp import jsonrpc as rpc


@pytest.mark.parametrize(
    ("data", "said"),
    [
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\\ud800"}}',
                     "invalid \\u escape at byte 55: \\ud800 (a high surrogate) must be followed",
                     id="lone-high-at-the-end"),
        pytest.param(b'{"a":"\\uDBFFx"}', "\\uDBFF (a high surrogate)", id="lone-high-mid-string"),
        pytest.param('{"a":"\\ud800"}', "\\ud800 (a high surrogate)", id="text"),
        pytest.param(b'{"a":"\\udc00"}', "invalid utf-16 surrogate pair", id="lone-low"),
        pytest.param(b'{"a":', "Input data was truncated", id="truly-truncated"),
        # an empty POST body read as "Input data was truncated" (tester finding)
        pytest.param(b"", "parse error: the message is empty", id="empty"),
        pytest.param(b" \r\n", "the message is empty", id="blank"),
    ],
)  # fmt: skip
def test_a_parse_error_says_what_is_wrong(data, said):
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(data)
    assert refused.value.code == rpc.PARSE_ERROR
    assert said in refused.value.message


def test_a_surrogate_pair_is_text():
    message = rpc.decode(
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\\ud83d\\ude00"}}'
    )
    assert isinstance(message, rpc.Request)
    assert message.params == {"a": "\U0001f600"}


@pytest.mark.parametrize(
    ("data", "rid"),
    [
        pytest.param(b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":"\\ud800x"}}', 7,
                     id="lone-high"),
        pytest.param(b'{"jsonrpc":"2.0","method":"ping","id":"c-1","params":{"a":"\\udc00"}}',
                     "c-1", id="lone-low-id-last"),
        pytest.param(b'{"jsonrpc":"2.0","params":{"id":3,"a":"\\ud800"},"method":"ping"}', None,
                     id="id-only-in-params"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_keeps_the_request_id(data, rid):
    # The rest of such a message is whole JSON: its id is read, so the client's call gets its
    # error instead of waiting for an answer addressed to a null id.
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(data)
    assert refused.value.code == rpc.PARSE_ERROR
    assert rpc.error_id(refused.value) == rid


def test_truly_broken_json_keeps_no_id():
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":')
    assert rpc.error_id(refused.value) is None
