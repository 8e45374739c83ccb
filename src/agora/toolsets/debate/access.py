"""Who may do what on a topic: the one place that decides, and the one denial it gives.

The no-oracle rule lives here: an unknown topic, a topic the caller cannot see, an
undeclared role and a role the caller does not own all raise the same `denied()` error,
byte for byte. Reads need project scope AND participation (an owned binding), which
conductor and star callers do not need; a topic whose project is the sentinel denies
everyone. Writes need an owned active binding on the named role: authorship comes from the
binding, never from the role string, and star never stands in for ownership.
Pure functions over the topic's records; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from agora.toolsets.debate.rules import PROJECT_RE, SENTINEL_PROJECT, DebateError, reject

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from agora.identity import Principal
    from agora.toolsets.debate.model import Binding, TopicRow

DENIED_MESSAGE: Final = (
    "unknown topic, or the topic or role is not available to this caller "
    "(check topic_id, or the projection_id of a verdict, and that one of your sessions holds "
    "the role: a role you held may have been rebound to another session by the conductor, "
    "with an override; the conductor-only tools also need the conductor scope, which only a "
    "[[principals]] entry's bearer token carries)"
)


def denied() -> DebateError:
    """The uniform not-found error: the same bytes whatever was missing or foreign."""
    return DebateError("unknown_topic", DENIED_MESSAGE)


BIND_DENIED_MESSAGE: Final = (
    "unknown topic, or no role there that you can bind: check the topic_id you were handed,"
    " that the role is one the topic declares, and that session_id is one of your sessions"
    " (debate_session_open mints one). A role another principal's session already holds is"
    " not free either: if it is yours to play, ask the conductor who handed you the"
    " topic_id (the conductor's debate_list_bindings names who holds each debate/v1 blind"
    ' role; only its holder can give it back, with debate_bind_role state "retired")'
)


def bind_denied() -> DebateError:
    """debate_bind_role's uniform not-found error, for a caller that may not learn that the
    topic exists: the same bytes whatever was missing, foreign or taken, in words that fit a
    caller acquiring a role."""
    return DebateError("unknown_topic", BIND_DENIED_MESSAGE)


def not_your_session(field: str, session_id: str, hint: str) -> DebateError:
    """A named session the caller does not own, where no topic is in question: the same
    words whether it is someone else's or does not exist (nothing is disclosed)."""
    return DebateError(
        "session_not_yours",
        f"{field} {session_id} is not one of your sessions; {hint}",
        field=field,
    )


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated principal as the debate rules see it."""

    name: str
    star: bool = False
    conductor: bool = False
    projects: frozenset[str] = frozenset()

    @classmethod
    def of(cls, principal: Principal) -> Caller:
        """The caller behind an MCP principal."""
        return cls(
            principal.name,
            star=principal.has("star"),
            conductor=principal.has("conductor"),
            projects=frozenset(principal.projects),
        )

    @property
    def privileged(self) -> bool:
        """Conductor or star: sees every non-sentinel topic without participating."""
        return self.star or self.conductor


def in_project(row: TopicRow, caller: Caller) -> bool:
    """Project scope: star sees every project; others need a grant (untagged passes)."""
    if row.project == SENTINEL_PROJECT:
        return False
    return caller.star or row.project is None or row.project in caller.projects


def participates(bindings: Iterable[Binding], caller: Caller) -> bool:
    """Whether the caller owns a live binding (active or diagnostic) or one the lifecycle
    retired when the topic closed."""
    return any(
        b.owner == caller.name and (b.state != "retired" or b.retired_by == "lifecycle")
        for b in bindings
    )


def can_read(row: TopicRow | None, bindings: Iterable[Binding], caller: Caller) -> bool:
    """The read gate: sentinel denies all; conductor/star allow; else scope AND participation."""
    if row is None or row.project == SENTINEL_PROJECT:
        return False
    if caller.privileged:
        return True
    return in_project(row, caller) and participates(bindings, caller)


def check_read(row: TopicRow | None, bindings: Iterable[Binding], caller: Caller) -> TopicRow:
    """``row`` if the caller may read the topic.

    Raises:
        DebateError: the uniform denial.
    """
    if row is None or not can_read(row, bindings, caller):
        raise denied()
    return row


def owned_binding(
    row: TopicRow | None,
    role_bindings: Sequence[Binding],
    role: str,
    caller: Caller,
    *,
    closing: bool = False,
) -> Binding:
    """The active binding of ``role`` that the caller owns (the write gate).

    Args:
        row: The topic (None when it does not exist).
        role_bindings: The role's bindings, oldest generation first.
        role: The role named by the call.
        caller: Who calls.
        closing: Lifecycle moves also accept the binding the RESOLVED move retired.

    Raises:
        DebateError: the uniform denial, whatever failed.
    """
    if row is None or role not in row.roles or not in_project(row, caller):
        raise denied()
    for b in reversed(role_bindings):
        if b.owner != caller.name:
            continue
        if b.state == "active" or (closing and b.retired_by == "lifecycle"):
            return b
    raise denied()


def resolve_project(explicit: str | None, caller: Caller) -> str | None:
    """The project of a new topic: an explicit writable value, else the creator's single
    grant, else untagged for star/conductor.

    Raises:
        DebateError: ``invalid_project``, ``project_out_of_scope`` or ``project_required``.
    """
    if explicit:
        if not PROJECT_RE.fullmatch(explicit):
            raise reject("invalid_project", f"project {explicit!r} must match {PROJECT_RE.pattern}")
        if caller.privileged or explicit in caller.projects:
            return explicit
        raise reject("project_out_of_scope", "the project is not one of your project grants")
    if len(caller.projects) == 1:
        return next(iter(caller.projects))
    if caller.privileged:
        return None
    raise reject("project_required", "name the project: you hold none or several grants")
