"""stdin and stdout as Trio streams, and newline-delimited message framing on them.

`open_stdio` gives a receive stream on stdin and a line writer on stdout. Pipes and sockets
are read and written with Trio's `FdStream` on duplicates of fds 0 and 1 in non-blocking
mode: no thread per read or write. Non-blocking mode belongs to the open file description,
which other processes may share, so it is used only where that is safe, and the previous
flags are restored when the block ends (FdStream restores them on close): a terminal (which
stderr usually shares, and logging would then fail with EAGAIN), a stdout that is also
stderr (``2>&1``), a regular file or ``/dev/null`` (which epoll refuses) are served with
blocking calls in a worker thread instead, where speed does not matter.

`Lines` is the sans-io framing: it never holds more than one message's worth of bytes, and
reports an oversize line once (with its first bytes, enough to name the request it was) while
skipping the rest of it. Shared by ``agora stdio`` (the
server) and the bridge (``agora stdio --connect``); nothing here knows about MCP.
"""

from __future__ import annotations

import os
import stat
import sys
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

#: Bytes asked of stdin per read.
READ_BYTES = 65536


@dataclass(frozen=True, slots=True)
class Oversize:
    """A line longer than the limit: its bytes are dropped but for the first few (``head``)."""

    head: bytes


class Lines:
    """Splits a byte stream into lines without their ``\\n`` (and a ``\\r`` before it).

    Args:
        limit: The longest line kept; a longer one comes out as an `Oversize`, once.
        keep: Bytes of an oversize line's start its `Oversize` keeps.
    """

    def __init__(self, limit: int, keep: int = 0) -> None:
        self.limit = limit
        self.keep = keep
        self._buf = bytearray()
        self._skipping = False

    def feed(self, data: bytes | bytearray) -> list[bytes | Oversize]:
        """The lines that ``data`` completes, in order (an `Oversize` for each one too long)."""
        out: list[bytes | Oversize] = []
        start = 0
        if self._skipping:
            start = data.find(b"\n") + 1
            if start == 0:
                return out
            self._skipping = False
        while (end := data.find(b"\n", start)) >= 0:
            if self._buf:
                self._buf += data[start:end]
                line = bytes(self._buf)
                self._buf.clear()
            else:
                line = bytes(data[start:end])
            out.append(self._checked(line))
            start = end + 1
        if start < len(data):
            if len(self._buf) + len(data) - start > self.limit + 1:  # +1: a CR may follow
                head = bytes(self._buf[: self.keep])
                head += data[start : start + self.keep - len(head)]
                self._buf.clear()
                self._skipping = True
                out.append(Oversize(head))
            else:
                self._buf += data[start:]
        return out

    def end(self) -> bytes | Oversize | None:
        """At end of input: the last line if it had no newline, else None."""
        if not self._buf:
            return None
        line = bytes(self._buf)
        self._buf.clear()
        return self._checked(line)

    def _checked(self, line: bytes) -> bytes | Oversize:
        if line.endswith(b"\r"):
            line = line[:-1]
        return line if len(line) <= self.limit else Oversize(line[: self.keep])


class LineWriter:
    """Writes whole lines to a stream, one at a time, never a torn one.

    A write that has begun is finished even if its caller is cancelled (a half line would
    corrupt every later message); the peer reading our stdout is the process that started
    us, and the session ends with it.
    """

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self._stream = stream
        self._lock = trio.Lock()

    async def send(self, line: bytes) -> None:
        """Write ``line`` and a newline.

        Raises:
            trio.BrokenResourceError: the reader has gone.
        """
        async with self._lock:
            with trio.CancelScope(shield=True):
                await self._stream.send_all(line + b"\n")


class _ThreadedFd(trio.abc.Stream):
    """Blocking reads and writes of one fd in a worker thread (terminals, files)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return await trio.to_thread.run_sync(
            os.read, self._fd, max_bytes or READ_BYTES, abandon_on_cancel=True
        )

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            try:
                sent = await trio.to_thread.run_sync(os.write, self._fd, view)
            except BrokenPipeError as exc:
                raise trio.BrokenResourceError("the reader has gone") from exc
            view = view[sent:]

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


def _pollable(fd: int) -> bool:
    """Whether ``fd`` may safely be made non-blocking and polled (see the module docstring)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)) or os.isatty(fd):
        return False
    # When stderr shares it, logging must keep its blocking writes.
    return fd == 2 or not _same_file(fd, 2)


def _same_file(a: int, b: int) -> bool:
    try:
        sa, sb = os.fstat(a), os.fstat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _stream(fd: int) -> trio.abc.Stream:
    if _pollable(fd):
        return trio.lowlevel.FdStream(os.dup(fd))
    return _ThreadedFd(fd)


@asynccontextmanager
async def open_stdio(
    stdin: int | None = None, stdout: int | None = None
) -> AsyncIterator[tuple[trio.abc.ReceiveStream, LineWriter]]:
    """stdin as a receive stream and stdout as a `LineWriter` for the duration of the block.

    Args:
        stdin: The fd to read (default: this process's standard input).
        stdout: The fd to write (default: this process's standard output).

    Yields:
        ``(receive stream, line writer)``; the fds' flags are restored on exit.
    """
    in_fd = sys.stdin.fileno() if stdin is None else stdin
    out_fd = sys.stdout.fileno() if stdout is None else stdout
    sys.stdout.flush()  # anything already printed goes before our lines
    async with AsyncExitStack() as stack:
        reader = _stream(in_fd)
        stack.push_async_callback(reader.aclose)
        writer = _stream(out_fd)
        stack.push_async_callback(writer.aclose)
        yield reader, LineWriter(writer)
