"""``agora call``: one tools/call against a running server, for quick checks.

The result goes to stdout as JSON; a failure is one line on stderr, and the exit status says
which kind it was (`agora.cli_parser` words them in ``agora call --help``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from typing import Any

#: `agora call`'s exit status when the server answered with a JSON-RPC error rather than a
#: result: not 1, which says the tool answered with an error result (``isError``).
CALL_ERROR_STATUS = 3


def server_error(error: dict[str, Any]) -> str:
    """A JSON-RPC error answering `agora call`, as its line on stderr: the server's code and
    message, and the correlation id that names the server's log line when it gave one."""
    line = f"the server answered with JSON-RPC error {error.get('code')}: {error.get('message')}"
    data = error.get("data")
    if isinstance(data, dict) and data.get("correlation_id"):
        line += f" (correlation id {data['correlation_id']}: the server's log says more)"
    return line


async def call(url: str, tool: str, arguments: dict[str, Any], token: str | None) -> int:
    """Call ``tool`` at ``url`` and print its result: `agora call`'s exit status."""
    from trio_websocket import ConnectionClosed, ConnectionRejected, HandshakeError

    from agora.bridge import rejected
    from agora.client import McpError, call_tool
    from agora.logsafe import shown_url

    shown = shown_url(url)  # a chess agent's seat token travels in the URL: never shown
    try:
        result = await call_tool(url, tool, arguments, token=token)
    except McpError as exc:
        print(f"agora call: {server_error(exc.error)}", file=sys.stderr)
        return CALL_ERROR_STATUS
    except ConnectionRejected as exc:
        print(f"agora call: {shown} refused the connection: {rejected(exc)}", file=sys.stderr)
        # A refused token (401) or Host (403) is bad configuration, as `agora stdio` says it.
        return 2 if exc.status_code in (401, 403) else 1
    except (HandshakeError, OSError) as exc:
        cause = exc.__cause__ or exc
        print(f"agora call: cannot connect to {shown}: {cause}", file=sys.stderr)
        return 1
    except ConnectionClosed as exc:
        # Said as the HTTP transport's -32603 and `agora stdio --connect`'s -32000 say it,
        # not as the WebSocket library's CloseReason<code=1001, ...> repr.
        why = exc.reason.reason if exc.reason is not None else None
        print(
            f"agora call: the connection closed before the answer{f' ({why})' if why else ''}:"
            " the call may or may not have taken effect; check before repeating it",
            file=sys.stderr,
        )
        return 1
    if not _print_result(json.dumps(result, indent=2, ensure_ascii=False)):
        return STDOUT_CLOSED
    return 1 if result.get("isError") else 0


#: `agora call`'s exit status when its reader closed stdout before the result was written
#: (``agora call ... | head -3``): a shell's status for a command that SIGPIPE ended.
STDOUT_CLOSED = 128 + signal.SIGPIPE


def _print_result(text: str) -> bool:
    """Write ``text`` to stdout; False, saying nothing, if its reader has closed it (a
    pipe's: `agora call ... | head -3`), as Unix tools end quietly there. The call's outcome
    is not one of its statuses: that reader took what it wanted."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # What is still buffered must not fail again at exit ("Exception ignored ...").
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return False
    return True
