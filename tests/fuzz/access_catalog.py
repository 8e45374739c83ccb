"""Every tool of the four toolsets, classified: which rule scopes it, or why it is public.

`SCOPED` maps each tool that checks ownership or scope to the rule it enforces; the access
test proves, for each one, that a second principal naming the first one's entity gets the
same answer as for an entity that does not exist, or, for the Memory tools that name no
entity (`EMPTY_MEMORY`), the same answer as before the first one's Memory existed. `PUBLIC`
maps each other tool to the reason it needs no such check. The test lists the tools of a
server with every toolset: a tool in neither table (a new tool nobody classified) or in
both fails it, and so does a name here that the server no longer lists.
"""

from __future__ import annotations

from typing import Final

_ATTEMPT = "the attempt behind challenge_handle is its entrant principal's (chamber identity)"
_RUN = "the workflow run belongs to the principal that planned it (router ownership)"
_RECORD = "evaluation records live under the caller's principal-scoped session"
_READ = "topic read gate: project scope AND participation (an owned binding)"
_WRITE = "topic write gate: the caller's own active binding on the named role"
_SESSION = "the named session must be the caller's own, and hold the role on the topic"
_MEMORY = (
    "Memory is its principal's (router ownership): no argument names an entity of Alice's, so "
    "a stranger's Memory calls answer exactly as before her Memory existed (an empty one)"
)
_CHESS = (
    "no argument names an entity and no principal owns a table: the table is the endpoint "
    "path's, which any caller may watch by name (chess contract); acting for its agent "
    "needs the agent token in the endpoint URL, a capability the table checks"
)
_UNAVAILABLE = "verified-host-required: always answers capability-unavailable and reads nothing"

SCOPED: Final[dict[str, str]] = {
    # chamber
    "observe_chamber": _ATTEMPT,
    "chamber_action": _ATTEMPT,
    "call_for_help": _ATTEMPT,
    "seal_attempt": _ATTEMPT,
    # router: runs, consent, evaluation records, memory observations
    "get_next_work": _RUN,
    "get_router_status": _RUN,
    "record_work_event": _RUN,
    "evaluate_gate": _RUN,
    "propose_support_consent": _RUN,
    "transition_support_consent": _RUN + "; the proposal id names its run",
    "compare_evaluations": _RECORD,
    "export_router_artifact": _RECORD + " (the comparison_ref names two of them)",
    "remember_workflow": _RUN + "; only the caller's completed run is remembered",
    "record_route_feedback": "the observation is bound to the caller's session and run",
    # router Memory: compared by `EMPTY_MEMORY`'s rule, not by entity ids
    "get_memory_status": _MEMORY,
    "list_workflow_candidates": _MEMORY,
    "preview_profile_update": _MEMORY,
    "transition_profile_update": _MEMORY,
    "rollback_profile_revision": _MEMORY,
    "purge_workflow_memory": _MEMORY,
    # debate
    "debate_init": "sessions in roles_json must be the caller's own (no takeover by id)",
    "debate_add_role": "conductor or star scope, on a visible topic, with the caller's session",
    "debate_advance_watermark": _WRITE,
    "debate_bind_role": _WRITE + " (or an unbound role), with the caller's own session",
    "debate_list_bindings": _READ,
    "debate_close_topic": _WRITE,
    "debate_compact": _WRITE,
    "debate_escalate": _WRITE,
    "debate_judge_prepare": _READ + ", and conductor scope",
    "debate_judge_verdict": _WRITE + " (the judge role), via the projection's topic",
    "debate_message_claim_reclaim": _READ + "; only the caller's own claims move",
    "debate_post": _WRITE,
    "debate_post_with_recipients": _WRITE,
    "debate_protocol_maintain": "conductor scope",
    "debate_protocol_state": _READ + " (denial echoes the not-configured shape)",
    "debate_read": _READ,
    "debate_reconcile_project": "conductor scope, on a topic whose project is the sentinel",
    "debate_rotate_session": _WRITE + "; both sessions the caller's own",
    "debate_search": _READ,
    "debate_set_lane": "role must read CONDUCTOR, then " + _WRITE,
    "debate_signal_advance": _SESSION,
    "debate_signal_check": _SESSION,
    "debate_signal_wait": _SESSION,
    "debate_state": _WRITE,
    "debate_trigger_dry_run": _READ + " on the trigger's topic",
    "debate_work_queue": "participation-filtered: unreachable topics vanish silently",
    "debate_worker_claim": _SESSION + " (the parent session of the trigger)",
    "debate_worker_reclaim": _READ + "; only the caller's own claims move",
}

#: The scoped tools whose contract names no entity of Alice's (the router's Memory tools):
#: a stranger's whole answers must be the same before and after her Memory is written.
EMPTY_MEMORY: Final = frozenset(name for name, rule in SCOPED.items() if rule == _MEMORY)

PUBLIC: Final[dict[str, str]] = {
    "enter_open_challenge": "creates the caller's own attempt; names no existing entity",
    "join_game": _CHESS,
    "get_board": _CHESS,
    "move_piece": _CHESS,
    "wait_for_turn": _CHESS,
    "sync_runtime_context": _UNAVAILABLE,
    "validate_route": _UNAVAILABLE,
    "plan_work": (
        "creates the caller's own run: its id derives from the principal-scoped session, so "
        "another principal's key never replays it (tests/router/test_router_ownership.py)"
    ),
    "run_model_evaluation": (
        "names only operator things (a sealed case under cases_dir, a configured "
        "authorization); the run it records is keyed by the caller's scoped session"
    ),
    "debate_session_open": "mints a session owned by the caller; names nothing",
    "debate_session_list": "takes no entity id and lists only the caller's own sessions",
}
