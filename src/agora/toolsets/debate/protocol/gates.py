"""The debate/v1 post gates that need nothing but the post and the micro-state.

Kinds: semantic (CLAIM CHALLENGE EVIDENCE REBUT CONCEDE VERIFY DISSENT ESCALATE), legacy
conversational (Q A STATUS DECISION: refused on v1 topics) and control (STATE PING
WATERMARK COMPACTION INFO: pass untouched). Each rejection carries its rule as the error
code. Pure functions; the topic-dependent gates (stale read, duplicates, targets) live in
`agora.toolsets.debate.commands.protocol`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.debate.rules import reject

if TYPE_CHECKING:
    from agora.toolsets.debate.protocol.state import ProtocolState

SEMANTIC_KINDS: Final = frozenset(
    {"CLAIM", "CHALLENGE", "EVIDENCE", "REBUT", "CONCEDE", "VERIFY", "DISSENT", "ESCALATE"}
)
LEGACY_KINDS: Final = frozenset({"Q", "A", "STATUS", "DECISION"})
BODY_MODES: Final = ("structured", "live_text")
VERIFY_RESULTS: Final = ("verified", "contested", "unsupported", "unknown")
#: What each phase accepts among the semantic kinds.
PHASE_KINDS: Final = {
    "BLIND_CLAIM": frozenset({"CLAIM"}),
    "DEBATE": frozenset({"CLAIM", "CHALLENGE", "EVIDENCE", "REBUT", "CONCEDE", "VERIFY"}),
    "ADJUDICATE": frozenset(),
    "STALEMATE": frozenset({"DISSENT", "ESCALATE"}),
    "STOPPED": frozenset(),
    "ESCALATED": frozenset(),
}
#: What a judge must know before the first verdict: the second repeats its decision exactly
#: (judges who wrote the same winner with reasons worded anew split the pair for good).
SAME_DECISION: Final = (
    'Both verdicts carry the same decision, word for word (e.g. "PRO wins", not reasons'
    " worded anew): they agree only when winner_msg_id and decision are both equal, and a"
    " split ends the debate in STALEMATE (judge_order_swap_disagreement) for good."
)
#: How a debate in ADJUDICATE moves on.
JUDGING_STEPS: Final = (
    "The conductor calls debate_judge_prepare (the AB and BA projections of the two blind"
    " positions), then one judge role gives debate_judge_verdict on both; debate_protocol_state"
    f" shows the projections and, once judged, the outcome. {SAME_DECISION}"
)
#: Kinds that answer a target (reply_to), and the kinds they may answer.
TARGET_KINDS: Final = {
    "CHALLENGE": frozenset({"CLAIM", "EVIDENCE", "REBUT"}),
    "EVIDENCE": frozenset({"CLAIM", "CHALLENGE", "REBUT"}),
    "REBUT": frozenset({"CHALLENGE"}),
    "CONCEDE": frozenset({"CHALLENGE", "CLAIM"}),
    "VERIFY": frozenset({"CLAIM", "EVIDENCE", "REBUT", "CONCEDE"}),
}


#: Kinds that answer the other side: never a message of the poster's own role.
OPPOSING_KINDS: Final = frozenset({"CHALLENGE", "REBUT"})


def payload(kind: str, text: str | None, body_mode: str | None) -> tuple[dict[str, Any], str]:
    """The structured payload of a semantic post, and its body mode.

    Raises:
        DebateError: ``invalid_body_mode`` or ``invalid_payload`` (naming the field).
    """
    mode = body_mode or "structured"
    if mode not in BODY_MODES:
        raise reject("invalid_body_mode", "body_mode is structured (default) or live_text")
    if text is None:
        raise reject(
            "invalid_payload",
            "debate/v1 posts need payload_json {summary, assumptions[], evidence_refs[]}",
            field="payload_json",
        )
    value = json.loads(text)  # the handler checked it is a JSON object
    summary = value.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise reject(
            "invalid_payload", "payload.summary must be a non-empty string", field="summary"
        )
    for name in ("assumptions", "evidence_refs"):
        if name not in value:
            raise reject(
                "invalid_payload", f"payload.{name} is required (may be empty: [])", field=name
            )
        if not isinstance(value[name], list):
            raise reject(
                "invalid_payload", f"payload.{name} must be an array (may be empty: [])", field=name
            )
    if kind == "VERIFY" and value.get("result") not in VERIFY_RESULTS:
        raise reject(
            "invalid_payload",
            "payload.result of a VERIFY is verified, contested, unsupported or unknown",
            field="result",
        )
    return value, mode


def phase_kind(state: ProtocolState, kind: str, role: str) -> None:
    """The per-phase kind gate, the round cap and the role rules of the blind phase.

    Raises:
        DebateError: ``verify_requires_non_blind_role``, ``blind_claim_only``,
            ``round_cap_reached``, ``protocol_stalemate``, ``protocol_terminal`` or
            ``wrong_phase``.
    """
    phase = state.phase
    if kind == "VERIFY" and role in state.blind_roles:
        raise reject(
            "verify_requires_non_blind_role",
            "VERIFY comes from a role outside the two blind positions",
            role=role,
        )
    if phase == "BLIND_CLAIM" and (kind != "CLAIM" or role not in state.blind_roles):
        raise reject(
            "blind_claim_only",
            "BLIND_CLAIM accepts only the blind roles' first CLAIMs",
            phase=phase,
            blind_roles=state.blind_roles,
        )
    if kind in PHASE_KINDS[phase]:
        return
    if phase == "STALEMATE" and state.stalemate_reason == "round_cap_unresolved":
        raise reject(
            "round_cap_reached",
            f"the debate used its {state.max_rounds} rounds; only DISSENT and ESCALATE remain",
            round_no=state.round_no,
            max_rounds=state.max_rounds,
        )
    if phase == "STALEMATE":
        raise reject(
            "protocol_stalemate",
            "the protocol is in STALEMATE: only DISSENT and ESCALATE are accepted",
            stalemate_reason=state.stalemate_reason,
        )
    if phase in ("STOPPED", "ESCALATED"):
        ended = "its outcome is in" if phase == "STOPPED" else "it waits for a human; see"
        raise reject(
            "protocol_terminal",
            f"the protocol is {phase}: the debate is over and takes no more semantic posts"
            f" ({ended} debate_protocol_state); what is left is to close the topic with"
            " debate_state new_state RESOLVED",
            phase=phase,
        )
    if phase == "ADJUDICATE":
        raise reject(
            "wrong_phase",
            f"{kind} is not accepted in ADJUDICATE, which takes no semantic posts: the round's"
            f" positions are being judged. {JUDGING_STEPS}",
            phase=phase,
            next_steps=["debate_judge_prepare", "debate_judge_verdict"],
        )
    raise reject(
        "wrong_phase",
        f"{kind} is not accepted in {phase}",
        phase=phase,
        allowed=sorted(PHASE_KINDS[phase]),
    )


def not_adjudicating(phase: str) -> Any:
    """The refusal of judging outside ADJUDICATE: which phase it needs, and how the debate
    gets there from ``phase`` (or that it never will)."""
    if phase in ("BLIND_CLAIM", "DEBATE"):
        how = (
            "it gets there when a VERIFY from a non-blind role, with result verified and no"
            " CHALLENGE open, closes a round"
        )
        if phase == "BLIND_CLAIM":
            how = f"both blind roles' CLAIMs move it to DEBATE first; then {how}"
    else:
        how = f"{phase} never returns to ADJUDICATE: this debate is judged no more"
    return reject(
        "wrong_phase",
        f"judging needs the protocol in ADJUDICATE, and it is in {phase}: {how}; read"
        " debate_protocol_state",
        phase=phase,
        needed_phase="ADJUDICATE",
    )
