"""The debate/v1 micro-state of one topic and its moves.

Phases BLIND_CLAIM -> DEBATE -> ADJUDICATE -> STOPPED, or STALEMATE (-> ESCALATED). Every
move goes through `move`, which compares the expected transition_version before it swaps
(a stale expectation loses and changes nothing) and bumps it by one. The blind barrier holds
the two blind roles' first CLAIMs back until both are committed, then releases them
together. Pure: callers persist the result.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.debate.protocol.judging import judging_view
from agora.toolsets.debate.rules import PROTOCOL_V1, reject, stamp

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.toolsets.debate.access import Caller
    from agora.toolsets.debate.model import Binding
    from agora.toolsets.debate.protocol.judging import Projection

PHASES: Final = ("BLIND_CLAIM", "DEBATE", "ADJUDICATE", "STOPPED", "STALEMATE", "ESCALATED")
#: Phases with a deadline: the timeout sweep moves them to STALEMATE.
TIMED_PHASES: Final = ("BLIND_CLAIM", "DEBATE", "ADJUDICATE")
#: Phases whose arrival changes every participant's next move (`ProtocolState.turned_at`).
TURNING_PHASES: Final = ("STALEMATE", "STOPPED", "ESCALATED")
#: Phases that end the debate: nothing is left to wait for (only control posts pass).
OVER_PHASES: Final = ("STOPPED", "ESCALATED")
#: Roles the missing-role recovery never rebinds, and that may never judge.
HUMAN_ROLES: Final = frozenset({"HUMAN", "OPERATOR"})
NOT_CONFIGURED_MESSAGE: Final = (
    "no debate/v1 protocol state for this topic (unknown topic, a legacy topic, "
    "or a topic not available to this caller)"
)


def not_configured() -> Any:
    """The one shape for missing, unreachable and legacy topics."""
    return reject("protocol_not_configured", NOT_CONFIGURED_MESSAGE)


def deadline(at: str, seconds: int) -> str:
    """``at`` (stored stamp) plus ``seconds``, as a stored stamp."""
    moment = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
    return stamp(moment + dt.timedelta(seconds=seconds))


@dataclass(slots=True)
class ProtocolState:
    """One topic's debate/v1 micro-state."""

    topic_id: str
    phase: str
    round_no: int
    max_rounds: int
    blind_roles: list[str]
    phase_timeout_seconds: int
    phase_deadline_at: str | None
    updated_at: str
    transition_version: int = 1
    blind_barrier_state: str = "waiting"
    stalemate_reason: str | None = None
    #: role -> msg_id of the blind roles' committed first CLAIMs.
    blind_commits: dict[str, str] = field(default_factory=dict)
    #: projection_id -> the judge projections (immutable; kept across moves).
    projections: dict[str, Projection] = field(default_factory=dict)
    #: How a role outside the blind pair ended the debate early by moving the topic to
    #: RESOLVED (`close_early`): {role, reason, msg_id, at, round_no}; None otherwise.
    closed_early: dict[str, Any] | None = None

    @classmethod
    def start(cls, topic_id: str, config: dict[str, Any], at: str) -> ProtocolState:
        """The micro-state debate_init creates: BLIND_CLAIM, round 1, barrier waiting, and
        no deadline yet: the phase clock starts when the topic becomes ACTIVE (`clocked`),
        since an INIT topic takes no posts."""
        return cls(
            topic_id,
            "BLIND_CLAIM",
            1,
            int(config["max_rounds"]),
            list(config["blind_roles"]),
            int(config["phase_timeout_seconds"]),
            None,
            at,
        )

    def clocked(self, at: str) -> ProtocolState:
        """This state with its phase deadline counted from ``at`` (the topic became ACTIVE):
        no move, so the transition_version stays."""
        timed = self.phase in TIMED_PHASES
        return replace(
            self,
            phase_deadline_at=deadline(at, self.phase_timeout_seconds) if timed else None,
            updated_at=at,
        )

    def public(self) -> dict[str, Any]:
        """The debate_protocol_state result (every reply's ``protocol_state``): the state,
        then the judging (`judging_view`: projections and outcome)."""
        return {
            "topic_id": self.topic_id,
            "protocol_version": PROTOCOL_V1,
            "phase": self.phase,
            "round_no": self.round_no,
            "max_rounds": self.max_rounds,
            "blind_roles": list(self.blind_roles),
            "blind_barrier_state": self.blind_barrier_state,
            "stalemate_reason": self.stalemate_reason,
            "transition_version": self.transition_version,
            "phase_deadline_at": self.phase_deadline_at,
            "phase_timeout_seconds": self.phase_timeout_seconds,
            "updated_at": self.updated_at,
            **judging_view(self.projections.values(), self.closed_early),
        }

    def turned_at(self, role: str) -> str | None:
        """When the protocol last changed what ``role`` does next without a message to it,
        or None while no such move stands: the move into STALEMATE, STOPPED or ESCALATED
        (everyone's: DISSENT and ESCALATE only, or nothing more), or, for a role that may
        judge (not blind, not human), this round's projections (debate_judge_prepare)."""
        if self.phase in TURNING_PHASES:
            return self.updated_at
        if self.phase == "ADJUDICATE" and role not in self.blind_roles and role not in HUMAN_ROLES:
            made = [p.created_at for p in self.projections.values() if p.round_no == self.round_no]
            return max(made, default=None)
        return None

    def pending_blind(self) -> dict[str, str]:
        """msg_id -> author role of the committed blind CLAIMs not yet released."""
        if self.blind_barrier_state == "released":
            return {}
        return {msg_id: role for role, msg_id in self.blind_commits.items()}

    def move(
        self, phase: str, at: str, *, expected: int, reason: str | None = None
    ) -> ProtocolState:
        """Swap to ``phase`` if the transition_version is still ``expected``.

        Returns:
            The new state (this object is left as it was).

        Raises:
            DebateError: ``transition_conflict`` when another move won first.
        """
        if expected != self.transition_version:
            raise reject(
                "transition_conflict",
                "the protocol moved since you read it; read debate_protocol_state again",
                expected_version=expected,
                transition_version=self.transition_version,
            )
        timed = phase in TIMED_PHASES
        return ProtocolState(
            self.topic_id,
            phase,
            self.round_no,
            self.max_rounds,
            list(self.blind_roles),
            self.phase_timeout_seconds,
            deadline(at, self.phase_timeout_seconds) if timed else None,
            at,
            self.transition_version + 1,
            self.blind_barrier_state,
            reason if phase == "STALEMATE" else self.stalemate_reason,
            dict(self.blind_commits),
            self.projections,
            self.closed_early,
        )

    def close_early(self, role: str, reason: str | None, msg_id: str, at: str) -> ProtocolState:
        """The state after ``role`` (outside the blind pair) moved the topic to RESOLVED
        while the debate was still live: STOPPED, with no deadline left, and the closing
        recorded so that the outcome says who closed it, and why."""
        new = self.move("STOPPED", at, expected=self.transition_version)
        new.closed_early = {
            "role": role,
            "reason": reason,
            "msg_id": msg_id,
            "at": at,
            "round_no": self.round_no,
        }
        return new


def check_close(
    state: ProtocolState | None,
    role: str,
    old_state: str,
    new_state: str,
    bindings: Iterable[Binding],
    owner: str,
) -> None:
    """Refuse a debater's move of a live debate/v1 topic from ``old_state`` to RESOLVED.

    A debater may not end the debate it argues: until the protocol has ended (STOPPED,
    STALEMATE or ESCALATED) only a role outside the blind pair closes the topic, and that
    ends the protocol too (`ProtocolState.close_early`). The debater is the principal, not
    the role it names: ``owner`` (the caller's principal) may not close it as another role
    while it holds one of ``bindings``' active blind roles.

    Raises:
        DebateError: ``illegal_transition``, saying who may close the topic instead.
    """
    if state is None or new_state != "RESOLVED" or state.phase not in TIMED_PHASES:
        return
    blind = state.blind_roles
    mine = (b.role for b in bindings if b.owner == owner and b.state == "active")
    held = role if role in blind else next((r for r in mine if r in blind), None)
    if held is None:
        return
    if held == role:
        who = f"{role} is a blind role of this debate/v1 topic"
    else:
        who = (
            f"your principal holds {held}, a blind role of this debate/v1 topic, so it may not"
            f" close it as {role} either"
        )
    raise reject(
        "illegal_transition",
        f"{who}, and its protocol is still in {state.phase}: a debater may not end the debate"
        " it argues. RESOLVED is moved by a role outside the blind pair (the conductor, say)"
        " held by a principal (bearer token) that holds no blind role of the topic, which"
        " ends the protocol early (STOPPED, its outcome naming that role and the reason), or"
        " by any role once the protocol has ended (STOPPED, STALEMATE or ESCALATED:"
        " debate_protocol_state)",
        old_state=old_state,
        new_state=new_state,
        phase=state.phase,
        allowed=[],
        held_role=held,
    )


def may_judge(state: ProtocolState, role: str) -> bool:
    """Whether ``role`` may give verdicts: neither blind nor human."""
    return role not in state.blind_roles and role not in HUMAN_ROLES


def judging_own_debate(
    state: ProtocolState | None, bindings: Iterable[Binding], owner: str, role: str
) -> str | None:
    """The role that would make ``owner`` judge its own debate if it held ``role`` too.

    Judge independence goes by principal (a binding's owner): one principal may not hold a
    blind role and a role that may judge at once, whichever sessions it uses, and one that
    ever held a blind role of the topic (retired since: its claim is still one of the
    positions judged) may not judge it. Human roles are neither. Every caller without a
    token is the one principal ``anonymous``, so it can never be independent of itself.

    Returns:
        For a blind ``role``, an active role that may judge held by ``owner``; for a role
        that may judge, a blind role ``owner`` holds or held; else None (also for a legacy
        topic, which has no blind pair).
    """
    if state is None or role in HUMAN_ROLES:
        return None
    blind = role in state.blind_roles
    for b in bindings:
        if b.owner != owner or b.role == role or b.role in HUMAN_ROLES:
            continue
        if blind and b.state == "active" and b.role not in state.blind_roles:
            return b.role
        if not blind and b.role in state.blind_roles:  # active or retired
            return b.role
    return None


def holds_both_blind(state: ProtocolState | None, bindings: Iterable[Binding], owner: str) -> bool:
    """Whether ``owner`` holds every blind role of the debate (active bindings): then no
    CLAIM is hidden from it (`guide.not_blind`)."""
    if state is None:
        return False
    held = {b.role for b in bindings if b.owner == owner and b.state == "active"}
    return held.issuperset(state.blind_roles)


def debates(state: ProtocolState, bindings: Iterable[Binding], owner: str) -> bool:
    """Whether ``owner`` holds or held (active or retired binding) a blind role of the
    debate: a debater, to whom the conductor scope's view of hidden CLAIMs does not apply."""
    return any(
        b.owner == owner and b.role in state.blind_roles and b.state != "diagnostic"
        for b in bindings
    )


def shared_blind(state: ProtocolState | None, bindings: Iterable[Binding]) -> bool:
    """Whether one principal holds every blind role of the debate (`holds_both_blind`)."""
    if state is None:
        return False
    bindings = list(bindings)
    return any(holds_both_blind(state, bindings, b.owner) for b in bindings)


def not_independent(state: ProtocolState, role: str, held: str, *, verdict: bool = False) -> Any:
    """The refusal of a judge that would not be independent of the blind pair: ``role`` was
    to be bound (or to judge) while its principal holds ``held``, a role of the other kind."""
    if verdict:
        why = (
            f"{role} is held by the principal that holds or held the blind role {held}: a "
            "judge must be independent of the blind pair, so the verdicts must come from a "
            "principal (a bearer token of its own) that never held a blind role of this "
            f"debate, bound to {role} (or to another role that may judge) when it is free"
        )
    elif role in state.blind_roles:
        why = (
            f"{role} is a blind role of this debate, and your principal already holds {held} "
            "on it, a role that may judge: a judge must be independent of the blind pair, so "
            f"bind {role} with another principal's bearer token, or retire {held} first "
            "(every caller without a token is one principal)"
        )
    else:
        why = (
            f"{role} may judge this debate, and your principal holds or held its blind role "
            f"{held}: a judge must be independent of the blind pair (retiring {held} does not "
            f"make it so), so bind {role} with the bearer token of a principal that never held "
            "a blind role of this debate (every caller without a token is one principal)"
        )
    return reject("ineligible_judge", why, role=role, held_role=held)


def hidden_ids(
    state: ProtocolState | None,
    caller: Caller,
    viewer_role: str | None,
    bindings: Iterable[Binding],
) -> set[str]:
    """The messages the blind barrier hides from this viewer.

    A pending blind CLAIM stays visible to conductor callers that do not debate (the control
    plane: a principal that holds or held a blind role of the topic is a debater, whatever
    its scopes, `debates`) and to its author: a caller viewing as the author role while
    owning that role's active binding. Everyone else, the other blind role, judges, humans
    and star included, sees nothing of it until both claims are committed.
    """
    if state is None:
        return set()
    pending = state.pending_blind()
    if not pending:
        return set()
    bindings = list(bindings)
    if caller.conductor and not debates(state, bindings, caller.name):
        return set()
    own = viewer_role is not None and any(
        b.role == viewer_role and b.owner == caller.name and b.state == "active" for b in bindings
    )
    return {msg_id for msg_id, role in pending.items() if not (own and role == viewer_role)}
