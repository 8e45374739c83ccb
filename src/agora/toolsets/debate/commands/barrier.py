"""debate/v1's blind barrier on delivery: what a held blind CLAIM hides, and from whom.

A blind CLAIM the barrier holds back is, to every viewer but its author and conductors
that do not debate (`hidden_ids`), no message at all (`seen`); their inboxes stop at it
(`visible_inbox`), so no cursor passes it (`check_advance`, `check_watermark`), and no
post is refused for an urgent message that the inbox holds behind it (`stale_read`). The
recipients of a held CLAIM are not told that it came (`announced`). Reads the topic's
records only: it moves no phase (`protocol` does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora.toolsets.debate.protocol.state import debates, hidden_ids
from agora.toolsets.debate.rules import START, reject

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.toolsets.debate.access import Caller
    from agora.toolsets.debate.model import Binding, MsgMeta
    from agora.toolsets.debate.protocol.state import ProtocolState
    from agora.toolsets.debate.topic import Topic


def stale_read(
    topic: Topic, caller: Caller, role: str, binding: Binding | None, reply_to: str | None
) -> None:
    """Refuse while an H message addressed to the poster lies past its cursor (the message
    the post answers counts as read: a reply shows its author read it). A message the
    barrier holds back from the poster's inbox (`visible_inbox`) is not unread yet: no check
    can return it, and the poster may be the blind role whose own CLAIM releases it."""
    data = topic.data
    session = binding.session_id if binding is not None else None
    cursor = data.cursors.get((role, session)) if session else None
    after = max(cursor.position if cursor else START, data.watermarks.get(role, START))
    keys = [f"role:{role}"] + ([f"session:{session}"] if session else [])
    hidden = set(data.protocol.pending_blind()) if data.protocol else set()
    stop = inbox_stop(topic, caller, role, keys)
    unread: dict[str, MsgMeta] = {}
    for key in keys:
        for meta in reversed(data.inbox.get(key, ())):
            if meta.cursor <= after:
                break
            if meta.msg_id in hidden or meta.msg_id == reply_to:
                continue
            if stop is not None and meta.cursor > stop:
                continue
            if meta.priority == "H" and meta.role != role:
                unread[meta.msg_id] = meta
    if not unread:
        return
    newest = max(unread.values(), key=lambda m: m.cursor)
    if len(unread) == 1:
        told = (
            f"an urgent (H) message addressed to you is unread ({newest.msg_id}): check"
            " your inbox and debate_signal_advance past it before posting, or post"
            " your answer to it (reply_to that message), which is accepted"
        )
    else:
        told = (
            f"{len(unread)} urgent (H) messages addressed to you are unread (the newest"
            f" {newest.msg_id}): check your inbox and debate_signal_advance to"
            f" {newest.msg_id}, which passes them all, before posting (a reply_to counts only"
            " the message it answers as read)"
        )
    raise reject("stale_read", told, unread_msg_id=newest.msg_id, unread_count=len(unread))


def inbox_stop(
    topic: Topic, caller: Caller, role: str, keys: Iterable[str]
) -> tuple[str, str] | None:
    """Where the barrier stops this viewer's inbox (the recipient ``keys``): the position of
    the first blind CLAIM addressed to it that the viewer may not see yet; None if none."""
    hidden = hidden_ids(topic.data.protocol, caller, role, topic.all_bindings())
    mine = set(keys)
    messages = topic.data.messages
    return min(
        (messages[m].cursor for m in hidden if mine.intersection(messages[m].recipients)),
        default=None,
    )


def release_step(state: ProtocolState, role: str) -> str:
    """What releases the barrier, said to ``role``: a blind role whose CLAIM is not in yet
    releases it itself (waiting would wait for ever), any other role waits; once the debate
    has left BLIND_CLAIM without both CLAIMs, nothing does."""
    if state.phase != "BLIND_CLAIM":
        return (
            f"the debate left BLIND_CLAIM ({state.phase}) before both blind CLAIMs were in, so"
            " the barrier never releases; debate_read shows the rest of the topic"
        )
    if role in state.blind_roles and role not in state.blind_commits:
        return (
            f"{role}'s blind CLAIM is not in yet, and it is what releases the barrier: post"
            " your own CLAIM (debate_post_with_recipients; what the barrier holds back needs"
            " no reading first)"
        )
    return "the barrier releases when both blind CLAIMs are in: wait for it (debate_signal_wait)"


def may_hold(topic: Topic, caller: Caller) -> bool:
    """Whether the barrier may hold messages back from this viewer: on a debate/v1 topic
    whose barrier waits (``blind_barrier_state``, which every reader sees), for every viewer
    but a conductor that does not debate. It depends on nothing hidden: whether a CLAIM came
    does not change it. Not in INIT: the topic takes no posts yet, so nothing can be held,
    and a blind role told to post its CLAIM would be refused (the note comes with ACTIVE)."""
    state = topic.data.protocol
    if state is None or state.blind_barrier_state != "waiting":
        return False
    if topic.row is not None and topic.row.state == "INIT":
        return False
    return not (caller.conductor and not debates(state, topic.all_bindings(), caller.name))


def held_note(state: ProtocolState, role: str) -> str:
    """The note of every check or wait of a viewer the barrier may hold messages back from
    (`may_hold`): what it holds and what releases it, the same words whether or not it
    holds anything, since a count would tell the recipients of a held CLAIM that it came."""
    return (
        "While the blind barrier waits (blind_barrier_state), a message addressed to you that"
        " comes after a blind CLAIM you may not see yet is held back with it: no check returns"
        " it before both blind CLAIMs are in, and no cursor passes it (this note is the same"
        " whether or not anything is held; what is held, and by whom, stays hidden);"
        f" {release_step(state, role)}."
    )


def held_for(topic: Topic, caller: Caller, role: str, meta: MsgMeta) -> str | None:
    """The note of a post (``meta``, by ``caller`` as ``role``) that the barrier holds back
    from a recipient role, a blind one or any other (the judge): it comes after a CLAIM of
    another role addressed to that recipient, which the recipient may not see yet. Said only
    of CLAIMs the poster may see (a conductor that does not debate, or the CLAIM's author),
    so it tells the poster nothing it could not read; None when nothing is held."""
    state = topic.data.protocol
    if state is None or not state.pending_blind():
        return None
    visible = set(state.pending_blind()) - hidden_ids(state, caller, role, topic.all_bindings())
    messages = topic.data.messages
    sees = caller.conductor and not debates(state, topic.all_bindings(), caller.name)
    held: list[str] = []
    for target in topic.require_row().roles:
        active = topic.active(target)
        if active is not None and sees and active.owner == caller.name:
            continue  # the poster's own inbox: it reads past the CLAIM
        inbox = {f"role:{target}"} | ({f"session:{active.session_id}"} if active else set())
        if not inbox.intersection(meta.recipients):
            continue
        if any(
            messages[m].role != target and inbox.intersection(messages[m].recipients)
            for m in visible
            if m != meta.msg_id
        ):
            held.append(target)
    if not held:
        return None
    who = " and ".join(held)
    missing = [r for r in state.blind_roles if r not in state.blind_commits]
    if state.phase != "BLIND_CLAIM":
        when = "the debate left BLIND_CLAIM without both CLAIMs, so it never releases"
    elif set(missing) <= set(held):
        when = f"{' and '.join(missing)}'s own CLAIM releases it"
    else:
        when = f"it releases when {' and '.join(missing)}'s CLAIM is in"
    others = [r for r in held if r not in state.blind_roles]
    scoped = (
        f"; a holder of {' or '.join(others)} with the conductor scope and no blind role reads"
        " past it"
        if others
        else ""
    )
    return (
        f"Note: {who} will not receive this message until the blind barrier releases: it"
        f" comes after a blind CLAIM addressed to {who} that {who} may not see yet, and an"
        " inbox stops at such a CLAIM, so no check returns what follows it before both blind"
        f" CLAIMs are in ({when}{scoped})."
    )


def with_held(
    topic: Topic, caller: Caller, role: str, meta: MsgMeta, note: str | None
) -> str | None:
    """A post's ``note``, followed by `held_for`'s when the barrier holds the post back."""
    held = held_for(topic, caller, role, meta)
    if held is None:
        return note
    return held if note is None else f"{note}\n{held}"


def held_back(topic: Topic) -> frozenset[str]:
    """The blind CLAIMs the barrier holds back right now (none outside debate/v1)."""
    state = topic.data.protocol
    return frozenset(state.pending_blind()) if state is not None else frozenset()


def announced(
    topic: Topic, meta: MsgMeta, recipients: list[str], held: frozenset[str]
) -> list[str]:
    """The recipient keys whose inboxes a v1 post visibly changed (``held``: what the barrier
    held back before it): none for a CLAIM the barrier now holds, whose recipients must not
    hear even that something came; with a post that released the barrier, the recipients of
    every CLAIM it released as well, since for them the release is the delivery."""
    now_held = held_back(topic)
    keys = [] if meta.msg_id in now_held else list(recipients)
    for msg_id in sorted(held - now_held):
        keys.extend(k for k in topic.data.messages[msg_id].recipients if k not in keys)
    return keys


def seen(topic: Topic, caller: Caller, role: str, msg_id: str | None) -> MsgMeta | None:
    """Message ``msg_id`` as this viewer (viewing as ``role``) may name it, or None: none
    such, or a held blind CLAIM the barrier hides from it. Every path that takes a msg_id
    looks it up here, so naming a held CLAIM's id answers as an id that does not exist."""
    meta = topic.data.messages.get(msg_id or "")
    state = topic.data.protocol
    if meta is None or state is None or msg_id not in state.pending_blind():
        return meta
    return None if msg_id in hidden_ids(state, caller, role, topic.all_bindings()) else meta


def visible_inbox(topic: Topic, caller: Caller, role: str, items: list[MsgMeta]) -> list[MsgMeta]:
    """The inbox up to (not including) the first message the blind barrier hides from this
    viewer, so no cursor can pass a CLAIM before its release. How many it holds back past
    that one is not said (`held_note`): the count would tell that the CLAIM came."""
    if topic.data.protocol is None:  # no blind barrier outside debate/v1
        return items
    hidden = hidden_ids(topic.data.protocol, caller, role, topic.all_bindings())
    if not hidden:
        return items
    for i, meta in enumerate(items):
        if meta.msg_id in hidden:
            return items[:i]
    return items


def check_advance(
    topic: Topic, caller: Caller, role: str, keys: tuple[str, ...], target: MsgMeta
) -> None:
    """On debate/v1 topics: refuse a cursor move to a message no check delivered yet, or
    past a blind CLAIM this viewer may not see yet.

    Raises:
        DebateError: ``advance_before_delivery`` or ``blind_barrier_pending``.
    """
    if topic.data.protocol is None:
        return
    _check_barrier(topic, caller, role, keys, target)
    marks = [topic.data.deliveries.get(key, {}).get(target.msg_id) for key in keys]
    if "pending" in marks and "delivered" not in marks:
        raise reject(
            "advance_before_delivery",
            "on debate/v1 topics a cursor moves only to a message a signal check delivered; "
            "call debate_signal_check first",
        )


def check_watermark(
    topic: Topic,
    caller: Caller,
    role: str,
    keys: tuple[str, ...],
    since: tuple[str, str],
    target: MsgMeta,
) -> None:
    """On debate/v1 topics: refuse a watermark at ``target`` that would move the active
    binding's cursor (at ``since``; its inbox is ``keys``) past a message addressed to that
    inbox that no check delivered yet, or past a blind CLAIM this viewer may not see yet:
    the cursor rules of `check_advance`, for a target that may be any message.

    Raises:
        DebateError: ``advance_before_delivery`` or ``blind_barrier_pending``.
    """
    if topic.data.protocol is None:
        return
    _check_barrier(topic, caller, role, keys, target)
    messages = topic.data.messages
    for key in keys:
        for msg_id, mark in topic.data.deliveries.get(key, {}).items():
            at = messages[msg_id].cursor
            if at > target.cursor:
                break  # (open markers are kept in (ts, msg_id) order)
            if mark == "pending" and at > since:
                raise reject(
                    "advance_before_delivery",
                    "on debate/v1 topics a watermark moves the cursor only past messages a "
                    f"signal check delivered; {msg_id} is not delivered yet: call "
                    "debate_signal_check first",
                )


def _check_barrier(
    topic: Topic, caller: Caller, role: str, keys: tuple[str, ...], target: MsgMeta
) -> None:
    """Refuse a cursor move to or past a blind CLAIM addressed to ``keys`` that this viewer
    may not see yet (``blind_barrier_pending``). The words state the barrier's rule and name
    no CLAIM: the refusal can show that something is held (the cursor rule needs it), never
    what, whose, or since when."""
    state = topic.data.protocol
    assert state is not None
    for msg_id in hidden_ids(state, caller, role, topic.all_bindings()):
        meta = topic.data.messages[msg_id]
        if meta.cursor <= target.cursor and set(meta.recipients) & set(keys):
            raise reject(
                "blind_barrier_pending",
                "your cursor cannot move there yet: a cursor passes only messages a check"
                " delivered, and while the blind barrier waits (blind_barrier_state) a check"
                " holds back what comes after a blind CLAIM you may not see yet (what it holds"
                f" stays hidden); {release_step(state, role)}",
            )
