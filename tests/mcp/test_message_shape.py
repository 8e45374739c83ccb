"""A message's arrays and objects are counted, and its nesting measured, before it is decoded.

A hostile client sent a megabyte of empty arrays inside params (``[[],[],...]``, 340,000 of
them, under the size limit): the decoder built them all and the depth walk visited each, half
a second of the event loop per message, every other client stalled meanwhile. Now the
brackets outside strings are counted first (`jsonrpc.check_shape`), and a message past
`jsonrpc.MAX_CONTAINERS` is refused with -32600 and its id, never decoded. (What the scan
costs is measured in bench/, not here.)
"""

from __future__ import annotations

import json
import threading

import pytest

from agora.errors import ProtocolError
from agora.mcp import batch
from agora.mcp import jsonrpc as rpc


def _ping(params: str, rid: int = 1) -> bytes:
    return f'{{"jsonrpc":"2.0","id":{rid},"method":"ping","params":{params}}}'.encode()


@pytest.fixture
def decoded(monkeypatch) -> list[bytes]:
    """The messages the JSON decoder was given."""
    seen: list[bytes] = []
    real = rpc._decoder

    class Spy:
        def decode(self, data: bytes) -> object:
            seen.append(data)
            return real.decode(data)

    monkeypatch.setattr(rpc, "_decoder", Spy())
    return seen


def test_a_megabyte_of_empty_arrays_is_refused_before_it_is_decoded(decoded):
    wide = _ping('{"x":[' + ",".join(["[]"] * 340_000) + "]}", rid=7)
    assert len(wide) <= rpc.MAX_MESSAGE_BYTES
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(wide)
    assert (refused.value.code, refused.value.message, refused.value.data) == (
        rpc.INVALID_REQUEST,
        "message holds more than 20000 arrays and objects",
        {"id": 7},
    )
    assert decoded == []


def test_up_to_the_limit_is_decoded_and_brackets_inside_strings_do_not_count(decoded):
    # The message's own object and params are two of them.
    at_limit = _ping('{"x":[' + ",".join(["[]"] * (rpc.MAX_CONTAINERS - 3)) + "]}")
    assert isinstance(rpc.decode(at_limit), rpc.Request)
    with pytest.raises(ProtocolError):
        rpc.decode(_ping('{"x":[' + ",".join(["[]"] * (rpc.MAX_CONTAINERS - 2)) + "]}"))
    text = json.dumps({"body": "[{" * 100_000 + '"\\"[' * 1000})
    assert isinstance(rpc.decode(_ping(text)), rpc.Request)
    assert len(decoded) == 2


def test_nesting_past_params_ceiling_is_refused_before_it_is_decoded(decoded):
    levels = rpc.MAX_PARAMS_DEPTH  # params itself is level 1 of its own depth
    fits = _ping('{"a":' * (levels - 1) + "{}" + "}" * (levels - 1))
    assert isinstance(rpc.decode(fits), rpc.Request)
    deep = _ping('{"a":' * levels + "{}" + "}" * levels, rid=3)
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(deep)
    assert (refused.value.message, refused.value.data) == (
        "params nested deeper than 64 levels",
        {"id": 3},
    )
    assert decoded == [fits]


def test_brackets_that_do_not_pair_up_are_left_to_the_decoder(decoded):
    broken = _ping('{"x":[' + "[}" * 100 + "]}")
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(broken)
    assert refused.value.code == rpc.PARSE_ERROR
    assert decoded == [broken]


def test_a_batch_is_counted_whole_before_it_is_decoded():
    wide = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":[' + ",".join(["[]"] * 30_000)
    refused = batch.parse(f"[{wide}]}}}}]".encode())
    assert isinstance(refused, dict)
    assert refused["error"]["message"] == "message holds more than 20000 arrays and objects"
    parsed = batch.parse(b'[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":[[]]}}]')
    assert isinstance(parsed, batch.Batch)
    assert isinstance(parsed.messages[0], rpc.Request)


def test_escaped_backslashes_and_quotes_end_a_string_where_json_does(decoded):
    deep = "[" * 70 + "]" * 70
    # "x\\" ends there: the brackets after it are outside, and 70 levels deep.
    outside = _ping('{"a":"x\\\\","b":' + deep + "}", rid=4)
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(outside)
    assert refused.value.message == "params nested deeper than 64 levels"
    # "x\" ... does not end there: the brackets are inside the string.
    inside = _ping('{"a":"x\\" ' + deep + ' \\\\\\" still text"}')
    assert isinstance(rpc.decode(inside), rpc.Request)


def test_an_unclosed_string_is_scanned_once_and_left_to_the_decoder():
    # A string that never closes, made of escaped quotes after 70 brackets: the first scan
    # tried a regular expression again from every later quote, hours for a megabyte (the
    # join below bounds a hang, it measures nothing).
    unclosed = _ping("[" * 70 + '"' + '\\"' * 500_000)
    assert len(unclosed) <= rpc.MAX_MESSAGE_BYTES
    outcome: list[BaseException] = []

    def decode() -> None:
        try:
            rpc.decode(unclosed)
        except ProtocolError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=decode, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the scan of an unclosed string did not end"
    [refused] = outcome
    assert refused.code == rpc.PARSE_ERROR


def test_objects_and_arrays_nested_in_turn_count_every_level(decoded):
    # The scan took ``[]`` then ``{}`` away in one pass, so {"a":[{"a":[...]}]} counted half
    # as deep as it is: params 100 levels deep passed a 64-level ceiling.
    def alternating(levels: int) -> str:
        opens = "".join('{"a":' if n % 2 == 0 else "[" for n in range(levels - 1))
        closes = "".join("}" if n % 2 == 0 else "]" for n in reversed(range(levels - 1)))
        return "{" + '"b":' + opens + "1" + closes + "}"

    fits = _ping(alternating(rpc.MAX_PARAMS_DEPTH))
    assert isinstance(rpc.decode(fits), rpc.Request)
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(_ping(alternating(rpc.MAX_PARAMS_DEPTH + 1)))
    assert refused.value.message == "params nested deeper than 64 levels"
    assert rpc.nested_deeper(rpc.bracket_shape(alternating(100)), 99)
    assert not rpc.nested_deeper(rpc.bracket_shape(alternating(100)), 100)


def test_a_deep_response_is_told_its_result_nests_too_deep():
    # A client's answer to a server request, its result too deep: it was told "params".
    levels = rpc.MAX_PARAMS_DEPTH + 1
    deep = '{"jsonrpc":"2.0","id":5,"result":' + '{"a":' * levels + "{}" + "}" * levels + "}"
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(deep)
    assert (refused.value.message, refused.value.data) == (
        "result or error nested deeper than 64 levels",
        {"id": 5},
    )


def test_arrays_alone_nested_too_deep_are_told_the_message_nests_too_deep():
    # A line of 1200 nested arrays was told "result or error nested deeper than 64 levels",
    # a response its client never sent.
    arrays = "[" * 1200 + "]" * 1200
    with pytest.raises(ProtocolError) as refused:
        rpc.decode(arrays)
    assert refused.value.message == "message nested deeper than 65 levels"
    assert batch.parse(arrays)["error"]["message"] == "message nested deeper than 66 levels"
