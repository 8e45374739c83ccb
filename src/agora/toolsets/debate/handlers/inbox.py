"""Delivery handlers: debate_signal_check, debate_signal_wait and debate_signal_advance.

The topic answers with index entries (`cursors.Inbox`); the bodies come from committed rows
(messages are immutable), so the actor keeps no transcript in memory.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

from agora.mcp.results import Guided
from agora.toolsets.debate import sql
from agora.toolsets.debate.commands.cursors import AdvanceCursor, CheckInbox, Inbox
from agora.toolsets.debate.handlers.common import caller, checked, own_sessions_only, run
from agora.toolsets.debate.protocol import guide
from agora.toolsets.debate.replies import message, sessions_named, tool_error
from agora.toolsets.debate.rules import (
    SIGNAL_LIMIT,
    SIGNAL_MAX,
    DebateError,
    normalise_ts,
    reject,
    stamp,
)
from agora.toolsets.debate.topic import KIND
from agora.toolsets.options import bounded

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Mapping

    from agora.store.neutral import ReadConn
    from agora.toolsets.base import ToolCall

WAIT_DEFAULT_MS = 55_000
#: Seconds between two progress notifications of a parked wait that asked for them
#: (option ``wait_progress_seconds``).
PROGRESS_EVERY: Final = 10.0
T = TypeVar("T")


def _check(
    call: ToolCall, *, persist: bool, only_if_found: bool = False, waits: bool = False
) -> CheckInbox:
    args = call.args
    get = args.get
    since_ts = get("since_ts") or None  # `opt` for a string argument, without its call
    if since_ts is not None:
        checked(normalise_ts, since_ts)
    limit = get("limit")
    limit = SIGNAL_LIMIT if limit is None else max(1, min(int(limit), SIGNAL_MAX))
    return CheckInbox(
        caller(call),
        args["session_id"],
        args["role"],
        limit,
        get("since_msg_id") or None,
        since_ts,
        persist,
        only_if_found,
        stamp(call.runtime.clock.wall()) if waits else None,
        "topic_id" in args,
    )


def _found(inbox: Inbox) -> bool:
    """A wait's readiness: its look found something, or the debate/v1 protocol turned since
    the wait began (one function for every wait, not a lambda made, and kept by the parked
    poll, per wait)."""
    return bool(inbox.count) or inbox.turned


def _result(inbox: Inbox, found: dict[str, dict[str, Any]], topic_id: str | None) -> dict[str, Any]:
    """The result shape of a check or wait, its messages from ``found`` (a wait's also names
    its topic, last)."""
    return inbox.result([found[m.msg_id] for m in inbox.pending], topic_id)


async def _render(call: ToolCall, inbox: Inbox, topic_id: str | None = None) -> dict[str, Any]:
    """`_result`, reading back the messages the topic no longer held."""
    found = inbox.bodies
    missing = [m.msg_id for m in inbox.pending if m.msg_id not in found]
    if missing:  # consumed already (an explicit since cursor went back): committed rows
        rows = await call.runtime.read(lambda conn: sql.messages_by_id(conn, missing))
        found = {**found, **{msg_id: message(row) for msg_id, row in rows.items()}}
    return await _shown(call, _result(inbox, found, topic_id))


async def _shown(call: ToolCall, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the session ids the caller does not own shown as null (as debate_read
    shows them). Most messages name roles only: then nothing is read."""
    pending, who, mine = result["pending"], caller(call), call.args["session_id"]
    if pending and not who.star and sessions_named(pending) - {mine}:
        result["pending"] = await call.runtime.read(
            lambda conn: own_sessions_only(conn, who, pending, mine)
        )
    return result


async def debate_signal_check(call: ToolCall) -> dict[str, Any]:
    """The caller's inbox past its cursor (the topic is required here), with what the blind
    barrier holds back in a second text block, if anything; in STALEMATE, the phase's step
    as a wait gives it (`guide.next_move`: the first ESCALATE ends the debate for everyone),
    since a debater that polls with checks would otherwise never read it."""
    inbox: Inbox = await run(call, call.args["topic_id"], _check(call, persist=True))
    result = await _render(call, inbox)
    notes = [n for n in (inbox.held_note, None if inbox.count else _ahead(call)) if n]
    state = result.get("protocol_state")
    if state is not None and state["phase"] == "STALEMATE":
        notes.append(guide.next_move(state))
    return Guided(result, "\n".join(notes)) if notes else result


def _ahead(call: ToolCall) -> str | None:
    """What a ``since_ts`` later than the server's clock means (a stale or skewed cursor):
    no message can come after it yet, since every message is stamped with the server's
    time; None for any other call."""
    since = call.args.get("since_ts") or None
    now = stamp(call.runtime.clock.wall())
    if since is None or normalise_ts(since) <= now:
        return None
    return (
        f"Your since_ts {since} is later than the server's clock ({now}), so it is ahead of"
        " every message: each message is stamped with the server's time when it commits, and"
        " none can come after that cursor before then. Leave since_ts out (your cursor then"
        " resumes where debate_signal_advance left it), or pass the ts of a message you read."
    )


def debate_signal_wait(call: ToolCall) -> Coroutine[Any, Any, dict[str, Any]]:
    """Wait until the inbox holds something (or timeout), then check it.

    Without a topic, waits on every topic where the session holds the role actively and
    answers with the first (by topic id) that has something. Returns the coroutine of the
    wait itself (one on a topic, or over the session's topics): a parked wait keeps no
    frame of this dispatch.
    """
    timeout = int(call.args.get("timeout_ms", WAIT_DEFAULT_MS)) / 1000
    if "topic_id" in call.args:
        return _wait_one(call, call.args["topic_id"], timeout)
    return _wait_any(call, timeout)


async def _wait_any(call: ToolCall, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109
    """`debate_signal_wait` without a topic: over every topic of the session's role."""
    peek = _check(call, persist=False, waits=True)
    topics = await _topics(call, peek)
    poll = partial(call.runtime.poll_many, KIND, dict.fromkeys(topics, peek), ready=_any_found)
    try:
        replies = await (
            _parked(call, timeout, poll, _any_found) if _reports(call) else poll(timeout=timeout)
        )
    except DebateError as err:
        raise tool_error(err) from None
    topic_id = next((t for t in sorted(replies) if _found(replies[t])), min(replies))
    inbox: Inbox = await run(call, topic_id, _check(call, persist=True))
    turned = any(r.turned for r in replies.values())
    return _told(call, inbox, await _render(call, inbox, topic_id), turned=turned)


async def _wait_one(call: ToolCall, topic_id: str, timeout: float) -> dict[str, Any]:  # noqa: ASYNC109
    """`debate_signal_wait` on one topic: each look that finds something records the check
    in the same turn (one command, not a look and then a check); only a wait that times
    out empty records its check afterwards."""
    look = _check(call, persist=True, only_if_found=True, waits=True)
    # wait_key: only posts to this role (or its session) re-run the look
    poll = partial(call.runtime.poll, KIND, topic_id, look, ready=_found, wait_key=look.role)
    try:
        inbox: Inbox = await (
            _parked(call, timeout, poll, _found) if _reports(call) else poll(timeout=timeout)
        )
    except DebateError as err:
        raise tool_error(err) from None
    turned = inbox.turned
    if not inbox.count:
        inbox = await run(call, topic_id, _check(call, persist=True))
        if not inbox.count:
            return _told(call, inbox, _result(inbox, inbox.bodies, topic_id), turned=turned)
    if len(inbox.bodies) == inbox.count:  # the topic held every body: nothing to read
        result = await _shown(call, _result(inbox, inbox.bodies, topic_id))
    else:
        result = await _render(call, inbox, topic_id)
    return _told(call, inbox, result, turned=turned)


def _any_found(replies: dict[str, Inbox]) -> bool:
    """A wait over several topics is ready when one of them is (`_found`)."""
    return any(_found(inbox) for inbox in replies.values())


def _reports(call: ToolCall) -> bool:
    """Whether the wait's request asked for progress (a ``progressToken`` in its ``_meta``):
    only such a wait is parked in slices (`_parked`); the others await their poll itself."""
    return call.meta.get("progressToken") is not None


async def _parked(
    call: ToolCall,
    timeout: float,  # noqa: ASYNC109 - the long-poll deadline is part of the request
    poll: Callable[..., Awaitable[T]],
    ready: Callable[[T], bool],
) -> T:
    """``poll(timeout=timeout)`` in slices of ``wait_progress_seconds``, with a progress
    notification after each slice that ends the wait neither ready nor timed out, so that a
    client (or a proxy) sees that the call is alive.

    Each slice starts with the wait's own command, so a post between two slices is found
    by the next one, and the command keeps the moment the wait began (what a protocol turn
    is compared with).
    """
    every = progress_period(call.runtime.options("debate"))
    role, sliced = call.args["role"], 0
    while True:
        reply = await poll(timeout=min(every, timeout - sliced * every))
        sliced += 1
        waited = min(sliced * every, timeout)
        if waited >= timeout or ready(reply) or call.runtime.closing:
            return reply
        told = f"waiting for messages addressed to {role}: {waited:g} s of {timeout:g} s"
        await call.progress(waited, timeout, told)


def progress_period(options: Mapping[str, Any]) -> float:
    """``wait_progress_seconds`` of ``[options.debate]`` (default `PROGRESS_EVERY`).

    Raises:
        OptionsError: it is not more than 0 (a `ValueError`).
    """
    every = bounded("debate", options, "wait_progress_seconds", PROGRESS_EVERY, 0.0, above=True)
    return float(every)


def _told(call: ToolCall, inbox: Inbox, result: dict[str, Any], *, turned: bool) -> dict[str, Any]:
    """``result`` of a wait, with what to do next in a second text block.

    A wait that found nothing is marked ``shutting_down: true`` when the server began
    shutting down (the runtime answers parked long-polls at once then, with their latest
    reply: not a timeout, so the agent waits again once reconnected), else ``timed_out:
    true`` unless the debate/v1 protocol turned (``turned``). Messages found are answered
    again by every wait until the cursor moves past them; while the blind barrier waits, what
    it may hold back and what releases it follow (`Inbox.held_note`); a ``protocol_state``
    in the result comes with what its phase still accepts (`guide.next_move`).
    """
    if inbox.count:
        more = ", and more behind them (truncated)" if inbox.truncated else ""
        text = (
            f"{inbox.count} message(s) for you{more}: handle them, then call"
            " debate_signal_advance with last_processed_msg_id"
            f" {result['next_cursor']['msg_id']}; until your cursor moves past them, every"
            " debate_signal_check and debate_signal_wait answers them again."
        )
    elif call.runtime.closing:
        result["shutting_down"] = True
        text = "The server is shutting down: nothing came. Wait again once reconnected."
    elif not turned:
        result["timed_out"] = True
        text = _ahead(call) or (
            "Nothing addressed to you came within timeout_ms: call debate_signal_wait again"
            " (only posts addressed to your role or session reach you, such as a"
            " debate_post_with_recipients naming it; a debate_post reaches no one)."
        )
    else:
        text = ""
    if inbox.held_note is not None:
        text = f"{text}\n{inbox.held_note}" if text else inbox.held_note
    state = result.get("protocol_state")
    if state is not None:
        step = guide.next_move(state)
        text = f"{text}\n{step}" if text else step
    return Guided(result, text) if text else result


async def _topics(call: ToolCall, peek: CheckInbox) -> list[str]:
    """The topics where the caller's session holds the role.

    Raises:
        ToolError: ``no_topic_for_role`` when there are none: no topic was named, so not the
            uniform ``unknown_topic``; the same words whether the session is someone else's,
            does not exist or is the caller's without the role (nothing is disclosed).
    """
    session_id, name = peek.session_id, peek.caller.name

    def read(conn: ReadConn) -> list[str]:
        if sql.session_owners(conn, [session_id]).get(session_id) != name:
            return []
        return [t for t, role in sql.active_bindings_of(conn, session_id) if role == peek.role]

    topics = await call.runtime.read(read)
    if not topics:
        raise tool_error(
            reject(
                "no_topic_for_role",
                f"session {session_id} holds role {peek.role} on no open topic you can see (it"
                " is not one of your sessions, or none of its active bindings is that role);"
                " name the topic with topic_id, or bind the role with debate_bind_role first",
            )
        )
    return topics


async def debate_signal_advance(call: ToolCall) -> dict[str, Any]:
    """Record the consumption receipt."""
    args = call.args
    command = AdvanceCursor(
        caller(call), args["session_id"], args["role"], args["last_processed_msg_id"]
    )
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    return result
