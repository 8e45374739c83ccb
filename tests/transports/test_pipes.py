"""stdio framing and streams: lines split however the bytes arrive, oversize lines reported
once and skipped, and stdin/stdout flags restored after non-blocking use."""

from __future__ import annotations

import os

import pytest
import trio

from agora.transports.pipes import Lines, Oversize, open_stdio

LIMIT = 10
#: An oversize line as `split` shows it (its head kept: none here).
OVERSIZE = Oversize(b"")


def split(
    chunks: list[bytes], keep: int = 0
) -> tuple[list[bytes | Oversize], bytes | Oversize | None]:
    lines = Lines(LIMIT, keep)
    out = [line for chunk in chunks for line in lines.feed(chunk)]
    return out, lines.end()


@pytest.mark.parametrize(
    ("chunks", "lines", "last"),
    [
        pytest.param([b"a\nb\n"], [b"a", b"b"], None, id="one-chunk"),
        pytest.param([b"ab", b"c\nd", b"e\n"], [b"abc", b"de"], None, id="split-lines"),
        pytest.param([b"a\r\nb\r", b"\n"], [b"a", b"b"], None, id="crlf"),
        pytest.param([b"a\n", b"tail"], [b"a"], b"tail", id="no-final-newline"),
        pytest.param([b"\n\n"], [b"", b""], None, id="empty-lines"),
        pytest.param([b"x" * LIMIT + b"\n"], [b"x" * LIMIT], None, id="at-the-limit"),
        pytest.param([b"x" * LIMIT + b"\r\n"], [b"x" * LIMIT], None, id="at-the-limit-crlf"),
        pytest.param([b"x" * 11 + b"\nok\n"], [OVERSIZE, b"ok"], None, id="oversize-one-chunk"),
        pytest.param(
            [b"x" * 8, b"x" * 8, b"x" * 30, b"x\nok\n"], [OVERSIZE, b"ok"], None,
            id="oversize-skipped-across-chunks",
        ),
        pytest.param([b"y" * 12], [OVERSIZE], None, id="oversize-at-the-end"),
    ],
)  # fmt: skip
def test_lines_are_split_however_the_bytes_arrive(chunks, lines, last):
    assert split(chunks) == (lines, last)


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([b"0123456789abc\nok\n"], id="whole-line"),
        pytest.param([b"01", b"2345", b"6789ab", b"c\nok\n"], id="across-chunks"),
        pytest.param([b"0123", b"456789abcdef", b"\nok\n"], id="head-in-the-buffer"),
    ],
)
def test_an_oversize_line_keeps_its_head_for_the_refusal(chunks):
    out, last = split(chunks, keep=6)
    assert out == [Oversize(b"012345"), b"ok"]
    assert last is None


def test_an_oversize_line_is_reported_by_type_not_by_content():
    out, _ = split([b"\x00oversize\n"])
    assert out == [b"\x00oversize"]


async def test_pipes_are_used_non_blocking_and_their_flags_restored():
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        os.write(in_w, b'{"a":1}\n')
        os.close(in_w)
        with trio.fail_after(10):
            async with open_stdio(in_r, out_w) as (receive, writer):
                assert not os.get_blocking(in_r)  # shared description: non-blocking inside
                assert not os.get_blocking(out_w)
                assert await receive.receive_some(100) == b'{"a":1}\n'
                assert await receive.receive_some(100) == b""
                await writer.send(b'{"b":2}')
        assert os.get_blocking(in_r)
        assert os.get_blocking(out_w)
        assert os.read(out_r, 100) == b'{"b":2}\n'
        os.fstat(in_r)  # our own fds stay open: the streams closed duplicates
    finally:
        for fd in (in_r, out_r, out_w):
            os.close(fd)


async def test_a_regular_file_is_read_without_polling(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"line\n")
    dst = tmp_path / "out.jsonl"
    with src.open("rb") as rin, dst.open("wb") as wout, trio.fail_after(10):
        async with open_stdio(rin.fileno(), wout.fileno()) as (receive, writer):
            assert await receive.receive_some(100) == b"line\n"
            assert await receive.receive_some(100) == b""
            await writer.send(b"answer")
    assert dst.read_bytes() == b"answer\n"
