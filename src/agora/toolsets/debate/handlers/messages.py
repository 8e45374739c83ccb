"""Posting handlers: debate_post, debate_post_with_recipients, debate_escalate,
debate_compact and debate_advance_watermark."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.mcp.results import Guided
from agora.toolsets.debate.commands.messages import AdvanceWatermark, Post
from agora.toolsets.debate.handlers.common import caller, checked, new_msg_id, opt, owners, run
from agora.toolsets.debate.protocol.guide import BROADCAST, BROADCAST_CLAIM
from agora.toolsets.debate.replies import tool_error
from agora.toolsets.debate.rules import (
    DEFAULT_VEHICLE,
    ROLE_RE,
    UUID_RE,
    DebateError,
    check_ooda,
    normalise_ts,
    parse_json_object,
    reject,
    split_csv,
)

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from agora.toolsets.base import ToolCall


def _tokens(text: str | None) -> tuple[str, ...]:
    if not text:  # absent or empty: names nobody (no list to split)
        return ()
    items = split_csv(text)
    for item in items:
        if not (ROLE_RE.fullmatch(item) or UUID_RE.fullmatch(item)):
            raise reject(
                "invalid_recipient", f"recipient {item!r} is neither a role nor a session id"
            )
    return tuple(items)


def _extra(args: dict[str, Any]) -> dict[str, Any]:
    # ``or None``: what `opt` does for these string arguments (the schema admits no other
    # type), without a call per argument on every post.
    payload = args.get("payload_json") or None
    if payload is not None:
        parse_json_object(payload, "payload_json")
    return {
        "payload": payload,
        "body_mode": args.get("body_mode") or None,
        "protocol_version": args.get("protocol_version") or None,
    }


async def _post(call: ToolCall, *, addressed: bool) -> dict[str, Any]:
    args = call.args
    get = args.get
    try:  # the shape checks of one post, each a `DebateError` before anything is asked
        if addressed:
            recipients = _tokens(get("addressed_to_csv"))
            if not recipients:
                raise reject("empty_recipients", "addressed_to_csv names nobody")
            diagnostic = _tokens(get("diagnostic_to_csv"))
        else:
            recipients = diagnostic = ()
        extra = _extra(args)
    except DebateError as err:
        raise tool_error(err) from None
    who = caller(call)
    author = get("author_session_id") or None
    owned = True
    if author is not None:
        owned = (await owners(call, author)).get(author) == who.name
    command = Post(
        who,
        new_msg_id(),
        args["role"],
        args["priority"],
        args["kind"],
        args["body"],
        vehicle=get("vehicle") or DEFAULT_VEHICLE,
        reply_to=get("reply_to") or None,
        standing=get("standing"),
        author_session_id=author,
        author_owned=owned,
        addressed=addressed,
        recipients=recipients,
        diagnostic=diagnostic,
        override_msg_id=(get("conductor_override_msg_id") or None) if addressed else None,
        extra=extra,
        tool=call.tool,
    )
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    if addressed or args["kind"] in ("STATE", "WATERMARK"):
        return result
    # A broadcast reaches no inbox: said first, before any note of the protocol's (unless
    # that note says it already, for a blind CLAIM that cannot be posted again).
    note = getattr(result, "guidance", None)
    if note is None:
        return Guided(result, BROADCAST)
    return result if note.startswith(BROADCAST_CLAIM) else Guided(result, f"{BROADCAST}\n{note}")


def debate_post(call: ToolCall) -> Coroutine[Any, Any, dict[str, Any]]:
    """Append one broadcast message (the coroutine of the post itself: no frame of this
    dispatch to create and resume)."""
    return _post(call, addressed=False)


def debate_post_with_recipients(call: ToolCall) -> Coroutine[Any, Any, dict[str, Any]]:
    """Append one addressed message (the coroutine of the post itself)."""
    return _post(call, addressed=True)


async def debate_escalate(call: ToolCall) -> dict[str, Any]:
    """Write the H/PING ``[ESCALATE:reason] target=ROLE``."""
    args = call.args
    target = args.get("target_role", "HUMAN")
    reason = " ".join(args["reason"].split())
    command = Post(
        caller(call),
        new_msg_id(),
        args["role"],
        "H",
        "PING",
        f"[ESCALATE:{reason}] target={target}",
        cc=(target,),
        tool=call.tool,
    )
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    return result


def _compaction_body(call: ToolCall) -> str:
    since, until = opt(call, "since_ts"), opt(call, "until_ts")
    since = normalise_ts(since) if since else "-"
    until = normalise_ts(until) if until else "-"
    if "-" not in (since, until) and since > until:  # fixed-width stamps sort as times
        raise reject(
            "invalid_timestamp",
            f"since_ts {since} is after until_ts {until}: the window runs backwards",
        )
    body: str = call.args["body"]
    check_ooda(body)
    return f"[COMPACTION since_ts={since} until_ts={until}]\n{body}"


async def debate_compact(call: ToolCall) -> dict[str, Any]:
    """Write a COMPACTION snapshot."""
    body = checked(_compaction_body, call)
    args = call.args
    command = Post(
        caller(call), new_msg_id(), args["role"], "INFO", "COMPACTION", body, tool=call.tool
    )
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    return result


async def debate_advance_watermark(call: ToolCall) -> dict[str, Any]:
    """Post the WATERMARK marker and reconcile the primary cursor."""
    args = call.args
    target = args["processed_up_to_msg_id"]
    command = AdvanceWatermark(caller(call), new_msg_id(), args["role"], target)
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    return result
