"""The three adapter tools: run an evaluation, compare two runs, export the comparison.

Without ``[options.router.adapter]`` each answers capability-unavailable (the contract's
capabilities and fallback, and a message saying only the operator can configure one), before
its arguments are checked (`agora.toolsets.router.bounds`). With it, ``authorization_ref``
must be one the operator listed. ``run_model_evaluation`` first asks its record whether the
key replays (a replay never reruns the adapter), then loads the sealed case and runs
``repeats`` fresh attempts, one subprocess each, and records them with the manifest digest.
A comparison is stored under ``<baseline_run_id>~<candidate_run_id>``: that is the
``comparison_ref`` an export names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import trio

from agora.mcp.results import Guided
from agora.toolsets.router import evaluation, replies
from agora.toolsets.router.adapter import AdapterConfig, CaseError, load_case, run_attempt
from agora.toolsets.router.bounds import no_adapter
from agora.toolsets.router.digests import request_digest, stable_id
from agora.toolsets.router.records import RECORDS, Get, Put, Replay
from agora.toolsets.router.run import refusals_logged

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall

#: Most attempts one call may run.
MAX_REPEATS: Final = 20
COMPARISON_SEPARATOR: Final = "~"


def _adapter(call: ToolCall) -> tuple[AdapterConfig, str, str, str]:
    config = AdapterConfig.from_options(call.runtime.options("router"))
    if config is None:  # (`bounds.unavailable_here` answers first, before the arguments)
        raise no_adapter(call.tool)
    if call.args["authorization_ref"] not in config.authorizations:
        raise replies.refusal("evaluation-not-authorized", "authorization_ref is not accepted:"
                              " send one the server's operator lists for this adapter")  # fmt: skip
    a = call.args
    return config, a["context"]["session_id"], a["idempotency_key"], request_digest(call.tool, a)


def comparison_ref(args: dict[str, Any]) -> str:
    """The record id of a comparison, ``<baseline_run_id>~<candidate_run_id>``."""
    return f"{args['baseline_run_id']}{COMPARISON_SEPARATOR}{args['candidate_run_id']}"


async def _document(call: ToolCall, record_id: str, session: str) -> dict[str, Any] | None:
    doc: dict[str, Any] | None = await call.runtime.call(RECORDS, record_id, Get(session))
    return doc


def _replayed(stored: dict[str, Any], key: str) -> Guided:
    """A stored result answered again for its idempotency key, saying so: these results
    have no ``replayed`` field, and a replayed evaluation ran no adapter."""
    return Guided(
        dict(stored),
        f"Replayed: the stored result of idempotency_key {key!r}; nothing ran again and"
        " nothing was recorded. Send a new key to run or record anew.",
    )


async def _put(
    call: ToolCall, record_id: str, kind: str, document: dict[str, Any], result: dict[str, Any]
) -> dict[str, Any]:
    a = call.args
    session, key = a["context"]["session_id"], a["idempotency_key"]
    digest = request_digest(call.tool, a)
    stored: dict[str, Any] = await call.runtime.call(
        RECORDS, record_id, Put(session, kind, key, digest, document, result)
    )
    return stored


@refusals_logged()
async def run_model_evaluation(call: ToolCall) -> dict[str, Any]:
    """Run fresh attempts of a sealed case through the configured adapter."""
    config, session, key, digest = _adapter(call)
    run_id = stable_id("eval", session, key)
    replayed = await call.runtime.call(RECORDS, run_id, Replay(session, key, digest))
    if replayed is not None:
        return _replayed(replayed, key)
    repeats = call.args["repeats"]
    if repeats > MAX_REPEATS:
        raise replies.refusal("repeats-too-many", f"at most {MAX_REPEATS} attempts per call:"
                              " send fewer repeats, and call again for more")  # fmt: skip
    ref = call.args["sealed_case_ref"]
    try:
        case = await trio.to_thread.run_sync(load_case, config, ref)
    except CaseError as exc:
        raise replies.refusal(
            str(exc),
            "the sealed case cannot be used: check sealed_case_ref"
            " against the cases the operator sealed",
            case=ref,
        ) from None
    attempts = [await run_attempt(config, case, n) for n in range(1, repeats + 1)]
    doc, result = evaluation.evaluation(run_id, ref, case, config.identity(), attempts)
    return await _put(call, run_id, "evaluation", doc, result)


@refusals_logged(comparison_ref)
async def compare_evaluations(call: ToolCall) -> dict[str, Any]:
    """Compare two recorded evaluation runs of this session."""
    _config, session, key, digest = _adapter(call)
    base_id, cand_id = call.args["baseline_run_id"], call.args["candidate_run_id"]
    ref = comparison_ref(call.args)
    replayed = await call.runtime.call(RECORDS, ref, Replay(session, key, digest))
    if replayed is not None:
        return _replayed(replayed, key)
    docs = [await _document(call, run_id, session) for run_id in (base_id, cand_id)]
    if base_id == cand_id or None in docs:
        raise replies.refusal("evaluation-run-unknown", "two distinct recorded runs are needed:"
                              " send the evaluation run ids run_model_evaluation returned in"
                              " this session")  # fmt: skip
    baseline, candidate = docs[0] or {}, docs[1] or {}
    result = evaluation.compare(baseline, candidate)
    manifests = [baseline["manifest_digest"], candidate["manifest_digest"]]
    doc = {**result, "manifest_digests": manifests}
    return await _put(call, ref, "comparison", doc, result)


@refusals_logged()
async def export_router_artifact(call: ToolCall) -> dict[str, Any]:
    """Export a recorded comparison as a sanitized artifact that stays review-required."""
    _config, session, key, digest = _adapter(call)
    export_id = stable_id("export", session, key)
    replayed = await call.runtime.call(RECORDS, export_id, Replay(session, key, digest))
    if replayed is not None:
        return _replayed(replayed, key)
    ref = call.args["comparison_ref"]
    comparison = await _document(call, ref, session) if COMPARISON_SEPARATOR in ref else None
    if comparison is None:
        raise replies.refusal("comparison-unknown", "comparison_ref names no recorded"
                              " comparison: send the comparison_ref compare_evaluations"
                              " returned in this session")  # fmt: skip
    result = evaluation.export(
        ref, comparison, call.args["export_kind"], call.args["attestation_ref"]
    )
    return await _put(call, export_id, "export", result, result)
