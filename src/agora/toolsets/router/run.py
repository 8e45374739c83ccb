"""The workflow-run entity: one actor per run, pure ``handle(command, now) -> Effects``.

Every mutation goes through the same gate, in this order: the idempotency ledger (the same
key with the same request digest replays the stored result with ``replayed: true`` and no
write at all; the same key with another request is refused), then the CAS check of
``expected_state_version``, then the command's own handler from `MUTATIONS`. A handler
validates first and raises a `ToolError` refusal before touching state; on success it
returns the result and its writes, and the gate bumps the state version and records the
result in the ledger, all in one commit. A run whose rows are corrupt answers every command
with a sanitized internal error. No I/O here beyond `RunKind.load` reading rows; a run the
store's `RunIndex` knows to be absent is created empty without reading (`RunKind.create`).
"""

from __future__ import annotations

import functools
import logging
import weakref
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.errors import ToolError
from agora.logsafe import loggable
from agora.mcp.contracts import load_contract
from agora.runtime.commands import CommandTable
from agora.runtime.entity import Effects, Write
from agora.toolsets.router import consent, gate_notes, guidance, progress, replies, reused, sql
from agora.toolsets.router.commands import (
    CreatePlan,
    EvaluateGate,
    Mutation,
    NextWork,
    ProposeSupport,
    RecordEvent,
    Snapshot,
    Status,
    TransitionSupport,
)
from agora.toolsets.router.index import RunIndex, index_of
from agora.toolsets.router.state import Applied, CorruptRun, Item, RunState, from_rows

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agora.mcp.validation import ValidationIssue
    from agora.runtime.clock import Now
    from agora.runtime.registry import Runtime
    from agora.store.neutral import ReadConn
    from agora.toolsets.base import Handler, ToolCall

log = logging.getLogger(__name__)

_ENCODER: Final = msgspec.json.Encoder()


def _text(value: dict[str, Any]) -> str:
    """``value`` as compact JSON text (a stored result or plan: msgspec, several times faster
    than ``json.dumps`` on every mutation; read back by ``json.loads`` all the same)."""
    return _ENCODER.encode(value).decode()


@functools.lru_cache(maxsize=256)
def _ids_json(ids: tuple[str, ...]) -> str:
    """A stored list of skill or check ids (the same few lists for every plan of a layout)."""
    return _ENCODER.encode(ids).decode()


TOOL_OF: Final[dict[type, str]] = {
    CreatePlan: "plan_work",
    RecordEvent: "record_work_event",
    EvaluateGate: "evaluate_gate",
    ProposeSupport: "propose_support_consent",
    TransitionSupport: "transition_support_consent",
    NextWork: "get_next_work",
    Status: "get_router_status",
    Snapshot: "remember_workflow",
}


def _create(
    cmd: CreatePlan, at: str, index: RunIndex | None, text: str
) -> tuple[RunState, list[Write]]:
    """The new run of a plan and its inserts (``text``: the plan result as stored JSON)."""
    plan = cmd.plan
    if index is not None:  # before the commit: the run may be stored from now on
        index.add(plan.workflow_run_id)
    run = RunState(
        plan.workflow_run_id, cmd.session_id, 0, 1, "planned", plan.envelope,
        plan.goal_binding_id, plan.work_graph_id, plan.explicit_locked, plan.result, [],
        routing=dict(plan.routing),
    )  # fmt: skip
    writes = [sql.insert_run(
        run.run_id, run.session_id, cmd.idempotency_key, run.status, run.envelope,
        run.goal_binding_id, run.work_graph_id, run.explicit_locked, len(plan.items), text,
        _text(plan.routing), at,
    )]  # fmt: skip
    items = []
    for n, work in enumerate(plan.items, start=1):
        status = "pending" if work.dependency_ids else "ready"
        run.items.append(Item(n, work, status))
        items.append((
            n, work.work_item_id, work.phase_id, work.primary_skill_id,
            _ids_json(work.support_skill_ids), _ENCODER.encode(work.dependency_ids).decode(),
            work.gate_id, _ids_json(work.check_ids), status,
        ))  # fmt: skip
    if items:  # one statement for the whole graph: the writer runs fewer
        writes.append(sql.insert_items(run.run_id, items, at))
    return run, writes


def _replay(run: RunState, cmd: Mutation) -> dict[str, Any] | ToolError:
    """The stored result of a replayed key (no write), or the refusal of a reused key."""
    digest, stored = run.ledger[cmd.idempotency_key]
    if digest not in (cmd.request_digest, cmd.legacy_digest):
        differs = reused.plan_differences(cmd, run) if isinstance(cmd, CreatePlan) else None
        return reused.run_key_reused(cmd.idempotency_key, run.run_id, TOOL_OF[type(cmd)], stored,
                                     differs)  # fmt: skip
    return {**stored, "replayed": True} if "replayed" in stored else stored


def _guided(run: RunState, cmd: Mutation, result: dict[str, Any], replayed: bool) -> Any:
    """A write's result with its note: the values of the run's next write and, for a plan,
    the checks of each phase (no field names them) and whether it was replayed (nor that);
    for an observation, that it counts for nothing without a check and what is left before
    the gate (its call, once all passed); for a gate, what failed it, a newer failure its
    refs leave out, or the phase next (`gate_notes`: no field tells any)."""
    completed = run.status == "completed"
    if isinstance(cmd, CreatePlan):
        return guidance.planned(result, run.items, replayed, run.state_version,
                                run.plan_revision, run.goal_binding_id, completed, run)  # fmt: skip
    note = None
    item = run.item_for(cmd.phase_id) if isinstance(cmd, RecordEvent | EvaluateGate) else None
    if isinstance(cmd, RecordEvent) and item is not None:
        note = gate_notes.after_event(cmd.observation, run, item)
    elif isinstance(cmd, EvaluateGate) and item is not None:
        refs = cmd.evidence_refs
        note = gate_notes.gate_note(result, progress.reported(run, item, refs),
                                    progress.newer_failures(run, item, refs), cmd.phase_id,
                                    progress.current(run))  # fmt: skip
    return guidance.written(result, run.state_version, run.plan_revision, completed, note,
                            run.goal_binding_id)  # fmt: skip


class WorkflowRun:
    """One run: its state (None until planned), or the mark that its rows are corrupt.

    ``index`` is the store's filter of runs that may exist; a plan adds its run to it.
    """

    def __init__(
        self,
        key: str,
        state: RunState | None,
        corrupt: str | None = None,
        index: RunIndex | None = None,
    ) -> None:
        self.key = key
        self.state = state
        self.corrupt = corrupt
        self.index = index

    @property
    def vacant(self) -> bool:
        """Not planned and no rows: the runtime keeps no actor for a lookup of the key."""
        return self.state is None and self.corrupt is None

    def handle(self, command: Any, now: Now) -> Effects:
        """Apply one command from `agora.toolsets.router.commands`.

        Returns:
            Effects whose reply is a result dict or a `ToolError` (refusals, unavailable,
            sanitized internal errors); writes only for an applied mutation.
        """
        tool = TOOL_OF[type(command)]
        if self.corrupt is not None:
            correlation = replies.new_correlation()
            log.error("router run %s is corrupt (%s); correlation %s", loggable(self.key),
                      loggable(self.corrupt, 400), correlation)  # fmt: skip
            return Effects(reply=replies.internal(correlation))
        run = self.state
        if run is not None and run.session_id != command.session_id:
            run = None  # another session's run is not visible
        if isinstance(command, Mutation):
            return self._mutate(run, command, tool, now)
        if run is None:
            return Effects(reply=replies.missing_run(tool, self.key))
        return Effects(reply=READS.dispatch(run, command))

    def _mutate(self, run: RunState | None, cmd: Mutation, tool: str, now: Now) -> Effects:
        if run is not None and cmd.idempotency_key in run.ledger:
            reply = _replay(run, cmd)
            if isinstance(reply, dict):  # the versions to send next are today's, not stored
                return Effects(reply=_guided(run, cmd, reply, replayed=True))
            return self._refused(tool, cmd, reply)
        at = sql.stamp(now.wall)  # a replay writes nothing, so it needs no time stamp
        if run is None and isinstance(cmd, TransitionSupport):
            refusal = replies.unknown_proposal(cmd.proposal_id)
            return self._refused(tool, cmd, refusal)
        if run is None and not isinstance(cmd, CreatePlan):
            return self._refused(tool, cmd, replies.missing_run(tool, self.key))
        current = 0 if run is None else run.state_version
        if cmd.expected_state_version != current:
            done = run is not None and run.status == "completed"
            conflict = replies.conflict(
                cmd.expected_state_version, current, run is not None, completed=done
            )
            return self._refused(tool, cmd, conflict)
        try:
            if isinstance(cmd, CreatePlan):  # the plan is stored as the result: encoded once
                result = cmd.plan.result
                text = _text(result)
                run, writes = _create(cmd, at, self.index, text)
                self.state = run
            else:
                assert run is not None
                result, writes = MUTATIONS.dispatch(run, cmd, current + 1, at)
                text = _text(result)
        except ToolError as refused:
            if refused.body.get("audited"):  # a refused consent transition is kept for audit
                logged(tool, self.key, refused, cmd.correlation_id)
                return Effects(reply=refused, writes=consent.audit(run, cmd, refused, at))
            return self._refused(tool, cmd, refused)
        previous, run.state_version = current, current + 1
        run.ledger[cmd.idempotency_key] = (cmd.request_digest, result)
        if previous:  # version 1 needs no claim: the run's own insert (its key) guards it
            writes.append(sql.claim_version(run.run_id, run.state_version, cmd.idempotency_key,
                                            at))  # fmt: skip
            writes.append(sql.update_run(run.run_id, run.state_version, run.status, at, previous))
        writes.append(sql.insert_ledger(run.run_id, cmd.idempotency_key, cmd.request_digest,
                                        text, at))  # fmt: skip
        # DEBUG (``agora serve -v``): an INFO line per commit cost ~8% of the server's CPU.
        if log.isEnabledFor(logging.DEBUG):  # not even the escaping on the hot path otherwise
            log.debug("router %s on %s -> version %d (correlation %s)", tool,
                      loggable(run.run_id), run.state_version,
                      loggable(cmd.correlation_id))  # fmt: skip
        return Effects(reply=_guided(run, cmd, result, replayed=False), writes=writes,
                       changed=True)  # fmt: skip

    def _refused(self, tool: str, cmd: Mutation, refusal: ToolError) -> Effects:
        """A write's refusal, logged at INFO with the caller's correlation id (README)."""
        logged(tool, self.key, refusal, cmd.correlation_id)
        return Effects(reply=refusal)


def logged(tool: str, key: str, refusal: ToolError, correlation: str) -> None:
    """Log the refusal of a write to the run (or proposal) ``key``: an operator finds an
    agent's failed call by its ``correlation_id`` (conflicts and missing runs included)."""
    _log_refusal(tool, key, refusal.body.get("code"), correlation)


def _log_refusal(tool: str, key: str, code: object, correlation: str) -> None:
    log.info("router %s on %s refused: %s (correlation %s)", tool, loggable(key), code,
             loggable(correlation))  # fmt: skip


#: The router's writes: the tools whose arguments carry a correlation_id (reads carry none).
WRITES: Final = frozenset(
    name
    for name, tool in load_contract("router").tools.items()
    if "correlation_id" in tool.input_schema.get("properties", {})
)
#: The argument a write's refusal names where it names no run (`subject_of`): the one naming
#: what the write acts on; "" for a write whose run (or reference) is computed from several
#: arguments (its refusals after the arguments passed name that). The writes not here name
#: their run (``workflow_run_id``).
SUBJECTS: Final = {
    "plan_work": "",
    "sync_runtime_context": "",
    "validate_route": "",
    "transition_support_consent": "proposal_id",
    "transition_profile_update": "proposal_id",
    "record_route_feedback": "observation_id",
    "purge_workflow_memory": "scope",
    "rollback_profile_revision": "source_revision_id",
    "run_model_evaluation": "sealed_case_ref",
    "compare_evaluations": "",
    "export_router_artifact": "comparison_ref",
}


def subject_of(tool: str, args: dict[str, Any]) -> str:
    """What a refusal of ``tool`` called with ``args`` names (`SUBJECTS`), ``-`` when the
    arguments do not carry it as a string."""
    subject = args.get(SUBJECTS.get(tool, "workflow_run_id"))
    return subject if isinstance(subject, str) else "-"


def arguments_refused(tool: str, args: dict[str, Any], body: dict[str, Any]) -> None:
    """Log a write refused for its arguments (its inputSchema's, the router's bounds, a
    plan's lock) as its other refusals are (`logged`).

    Args:
        tool: The tool called.
        args: The arguments as sent: the line names the run (or what the write acts on) and
            the correlation_id from them, each ``-`` when it is not there as a string.
        body: The refusal answered.

    A read carries no correlation_id, and its refusals are not logged (the router's
    `Toolset.rejected` hook, and the refusals below).
    """
    if tool not in WRITES:
        return
    correlation = args.get("correlation_id")
    _log_refusal(
        tool,
        subject_of(tool, args),
        body.get("code"),
        correlation if isinstance(correlation, str) else "-",
    )


def refused_for_arguments(call: ToolCall, issues: Sequence[ValidationIssue]) -> ToolError:
    """The refusal of ``call`` for ``issues`` in its arguments, logged (`arguments_refused`)."""
    refusal = ToolError(replies.argument_rejection(issues))
    arguments_refused(call.tool, call.args, refusal.body)
    return refusal


def refusals_logged(
    subject: Callable[[dict[str, Any]], str] | None = None,
) -> Callable[[Handler], Handler]:
    """A Memory or evaluation write's handler whose refusals are `logged` as a run's are,
    naming what the write acts on where a run's line names the run (`subject_of`, or
    ``subject`` computed from the arguments): such a write does not go through a run's
    `WorkflowRun._refused`. An internal error is not a refusal: it is logged under its own
    ``corr-`` id."""

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def logging_refusals(call: ToolCall) -> dict[str, Any]:
            try:
                result: dict[str, Any] = await handler(call)
            except ToolError as refused:
                if refused.body.get("code") != "internal-error":
                    args = call.args
                    named = subject_of(call.tool, args) if subject is None else subject(args)
                    logged(call.tool, named, refused, args["correlation_id"])
                raise
            return result

        return logging_refusals

    return wrap


#: The reads of an existing run, one per command type (they change nothing).
READS: Final[CommandTable[Any]] = CommandTable()
READS.on(NextWork)(lambda run, _command: progress.next_work(run))
READS.on(Status)(lambda run, _command: progress.status(run))
READS.on(Snapshot)(lambda run, _command: progress.snapshot(run))

#: The handlers of the mutations that apply to an existing run, one per command type.
MUTATIONS: Final[CommandTable[Applied]] = CommandTable()
MUTATIONS.on(RecordEvent)(progress.record_event)
MUTATIONS.on(EvaluateGate)(progress.evaluate_gate)
MUTATIONS.on(ProposeSupport)(consent.propose)
MUTATIONS.on(TransitionSupport)(consent.transition)


class RunKind:
    """Loads workflow runs (the `EntityKind` of the router) of one store, whose `RunIndex`
    it keeps; `kind_of` gives a runtime's."""

    kind = "router-run"

    def __init__(self, index: RunIndex | None = None) -> None:
        self.index = index

    def create(self, key: str, now: Now) -> WorkflowRun | None:
        """An unplanned run, without reading, when the index knows ``key`` is not stored."""
        if self.index is None or not self.index.absent(key):
            return None
        return WorkflowRun(key, None, index=self.index)

    def load(self, conn: ReadConn, key: str, now: Now) -> WorkflowRun:
        """Rebuild the run ``key`` from its rows; a missing run is an unplanned one."""
        rows = sql.read_run(conn, key)
        if rows is None:
            return WorkflowRun(key, None, index=self.index)
        try:
            return WorkflowRun(key, from_rows(rows), index=self.index)
        except CorruptRun as exc:
            return WorkflowRun(key, None, corrupt=str(exc), index=self.index)


_KINDS: weakref.WeakKeyDictionary[Any, RunKind] = weakref.WeakKeyDictionary()


def kind_of(runtime: Runtime) -> RunKind:
    """The run kind of ``runtime``'s store: every runtime on one store shares its index (a
    guarded store has none: it never asks `RunKind.create`)."""
    store = runtime.store
    kind = _KINDS.get(store)
    if kind is None:
        kind = _KINDS[store] = RunKind(None if store.guarded else index_of(store))
    return kind
