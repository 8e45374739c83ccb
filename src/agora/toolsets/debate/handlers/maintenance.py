"""debate_protocol_maintain and the phase-timeout background task.

One run: validate every listed id, read the candidates from committed rows (a malformed
stored roster or metadata fails the whole run before anything moves), then apply every
topic's `Sweep` in one `call_atomic` unit, so a run changes all it found or nothing. The
phase-timeout sweep is global in every run; ``topic_ids_csv`` scopes only the recovery.
The background task runs the same phase-timeout sweep on its own, topic by topic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agora.runtime.background import periodic
from agora.toolsets.debate import sql
from agora.toolsets.debate.commands.maintenance import Sweep, lost_roles
from agora.toolsets.debate.handlers.common import caller, checked, new_id
from agora.toolsets.debate.handlers.inbox import progress_period
from agora.toolsets.debate.replies import tool_error
from agora.toolsets.debate.rules import check_uuid, reject, split_csv, stamp
from agora.toolsets.debate.topic import KIND
from agora.toolsets.options import bounded

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.runtime.registry import Runtime
    from agora.store.neutral import ReadConn
    from agora.toolsets.base import ToolCall

#: Who the background sweep acts as in history events.
SWEEPER: Final = "agora:phase-timeout-sweep"
#: Seconds between two background phase-timeout sweeps (option ``phase_sweep_seconds``).
SWEEP_EVERY: Final = 5.0
#: ``[options.debate]``: seconds between two sweeps of expired phases (default `SWEEP_EVERY`),
#: and between two progress notifications of a parked wait (`inbox.progress_period`).
OPTIONS: Final = {"phase_sweep_seconds": float, "wait_progress_seconds": float}


def _ids(text: str | None) -> list[str] | None:
    if text is None:
        return None
    ids = split_csv(text)
    for topic_id in ids:
        check_uuid(topic_id, "topic_ids_csv item")
    return ids


async def debate_protocol_maintain(call: ToolCall) -> dict[str, Any]:
    """Run the phase-timeout and missing-role sweeps once."""
    ids = checked(_ids, call.args.get("topic_ids_csv"))
    who = caller(call)
    if not who.conductor:
        raise tool_error(
            reject(
                "conductor_required",
                "debate_protocol_maintain needs the conductor scope: call with the bearer token "
                'of a [[principals]] entry whose scopes include "conductor" (a caller without a '
                "token holds no scope)",
            )
        )
    at = stamp(call.runtime.clock.wall())

    def read(conn: ReadConn) -> dict[str, Sweep]:
        sweeps: dict[str, Sweep] = {}
        for topic_id, phase, version in sql.expired_phases(conn, at):
            if sql.topic_row(conn, topic_id) is not None:  # raises on a malformed row
                sweeps[topic_id] = Sweep(who.name, phase, version)
        for row, held in sql.recovery_candidates(conn, ids):
            roles = tuple((r, new_id()) for r in lost_roles(row.roles, held))
            if roles:
                base = sweeps.get(row.topic_id, Sweep(who.name))
                sweeps[row.topic_id] = Sweep(
                    who.name, base.expected_phase, base.expected_version, roles
                )
        return sweeps

    try:
        sweeps = await call.runtime.read(read)
        replies = (
            await call.runtime.call_atomic(
                [(KIND, topic_id, sweeps[topic_id]) for topic_id in sorted(sweeps)]
            )
            if sweeps
            else []
        )
    except (ValueError, LookupError):
        raise tool_error(
            reject(
                "malformed_topic",
                "a topic's stored roster or metadata is malformed; nothing was swept",
            )
        ) from None
    return {
        "timed_out": [r["timed_out"] for r in replies if r["timed_out"] is not None],
        "role_recoveries": [x for r in replies for x in r["role_recoveries"]],
    }


async def sweep_phase_timeouts(runtime: Runtime) -> list[dict[str, Any]]:
    """One background pass: every expired timed phase moves to STALEMATE (CAS per topic)."""
    at = stamp(runtime.clock.wall())
    expired = await runtime.read(lambda conn: sql.expired_phases(conn, at))
    moved = []
    for topic_id, phase, version in expired:
        reply = await runtime.call(KIND, topic_id, Sweep(SWEEPER, phase, version))
        if reply["timed_out"] is not None:
            moved.append(reply["timed_out"])
    return moved


async def phase_timeout_step(runtime: Runtime) -> None:
    """The background task's step (see `agora.runtime.background.periodic`)."""
    await sweep_phase_timeouts(runtime)


def check_options(options: Mapping[str, Any]) -> None:
    """The debate's `Toolset.options_check`: ``phase_sweep_seconds`` read at start as the
    sweep reads it, so that a period it cannot run with (0, negative) stops the server rather
    than ending the sweep, and with it every phase timeout, at start; and
    ``wait_progress_seconds`` as a wait reads it, rather than failing the first wait that
    asks for progress.

    Raises:
        ValueError: ``phase_sweep_seconds`` or ``wait_progress_seconds`` is not more than 0.
    """
    sweep_period(options)
    progress_period(options)


def sweep_period(options: Mapping[str, Any]) -> float:
    """``phase_sweep_seconds`` of ``[options.debate]`` (default `SWEEP_EVERY`).

    Raises:
        OptionsError: it is not more than 0 (a `ValueError`).
    """
    return float(bounded("debate", options, "phase_sweep_seconds", SWEEP_EVERY, 0.0, above=True))


async def phase_timeout_task(runtime: Runtime) -> None:
    """The background task: `phase_timeout_step` every ``phase_sweep_seconds`` (option of
    ``[options.debate]``, default 5)."""
    await periodic(sweep_period(runtime.options("debate")), phase_timeout_step)(runtime)
