"""The wake dry run on the topic entity: `DryRunWake` (debate_trigger_dry_run).

The preserved trigger message is the authority (its recipients, author and vehicle), never
the caller's JSON, which only names it. Each recipient resolves to the (role, session) that
actively holds it; one (role, session) is woken once however it was addressed (singleton);
a recipient is suppressed when it is the author, holds no active binding, already consumed
the trigger, or has a worker claim covering it (a retired claim is redispatched). A pending
blind CLAIM waits for its barrier (``blind_barrier_wait``) for those who may see it; for
anyone else its id answers as an unknown one does, byte for byte. Every path records one
history event; nothing is delivered, posted or woken.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.runtime.entity import Effects
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands import barrier
from agora.toolsets.debate.commands.table import COMMANDS

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.model import MsgMeta
    from agora.toolsets.debate.topic import Topic

TRIGGER_SCHEMA: Final = "debate.trigger/v1"


class DryRunWake(msgspec.Struct, frozen=True, tag=True):
    """Resolve who a trigger would wake, and record that it was asked."""

    caller: Caller
    action: str
    schema_version: object
    msg_id: str | None
    #: The trigger's preserved vehicle, read by the handler (None: not in this topic).
    vehicle: str | None


def _resolve(topic: Topic, meta: MsgMeta, action: str) -> tuple[list[Any], list[Any], int]:
    targets: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for key in meta.recipients:
        kind, _, name = key.partition(":")
        if kind == "role":
            holder = topic.active(name)
            pair = None if holder is None else (name, holder.session_id)
        else:
            holder = next(
                (b for b in topic.all_bindings() if b.session_id == name and b.state == "active"),
                None,
            )
            pair = None if holder is None else (holder.role, name)
        reason = None
        if pair is None:
            reason = "no_active_binding"
        elif pair in seen:
            reason = "singleton"
        elif pair[0] == meta.role:
            reason = "author"
        elif topic.processed(*pair, meta):
            reason = "already_consumed"
        else:
            claim = topic.data.workers.get((*pair, meta.msg_id))
            if claim is not None and claim.state != "retired":
                reason = f"worker_claim_{claim.state}"
        if reason is None and pair is not None:
            seen.add(pair)
            claim = topic.data.workers.get((*pair, meta.msg_id))
            targets.append(
                {
                    "role": pair[0],
                    "session_id": pair[1],
                    "trigger_msg_id": meta.msg_id,
                    "action": action,
                    "redispatch": claim is not None,
                }
            )
            logs.append({"recipient": key, "result": "target"})
        else:
            logs.append({"recipient": key, "result": f"suppressed:{reason}"})
    return targets, logs, sum(1 for entry in logs if entry["result"] != "target")


@COMMANDS.on(DryRunWake)
def dry_run_wake(topic: Topic, cmd: DryRunWake, now: Now) -> Effects:
    topic.read_gate(cmd.caller)
    meta = topic.data.messages.get(cmd.msg_id or "")
    # A blind CLAIM the barrier hides from the caller (seen only by its author, who owns
    # the author role, and by conductors) is, to the caller, no message at all.
    if meta is not None:
        meta = barrier.seen(topic, cmd.caller, meta.role, meta.msg_id)
    targets: list[Any] = []
    logs: list[Any] = []
    notify: list[Any] = []
    suppressed = 0
    if cmd.schema_version != TRIGGER_SCHEMA:
        result = "schema_mismatch"
    elif meta is None or cmd.vehicle is None:
        result = "unknown_trigger"
    elif topic.data.protocol is not None and meta.msg_id in topic.data.protocol.pending_blind():
        result = "blind_barrier_wait"
    else:
        found, logs, suppressed = _resolve(topic, meta, cmd.action)
        if cmd.vehicle == "implementation":
            result, notify = "implementation_requires_impl_vehicle", found
        else:
            result, targets = ("targets" if found else "no_targets"), found
    at = topic.stamp_now(now)
    writes: list[Write] = []
    topic.event(
        writes,
        at,
        "wake_dry_run",
        cmd.caller.name,
        action=cmd.action,
        result=result,
        trigger_msg_id=cmd.msg_id if meta is not None else None,
        targets=len(targets),
        notify_targets=len(notify),
        suppressed=suppressed,
    )
    reply = {
        "topic_id": topic.topic_id,
        "trigger_msg_id": cmd.msg_id if meta is not None else None,
        "action": cmd.action,
        "result": result,
        "targets": targets,
        "notify_targets": notify,
        "logs": logs,
        "suppressed": suppressed,
    }
    # Writes only its history event: changed stays False so no waiter is woken.
    return Effects(reply=reply, writes=writes)
