"""What a caller learns when its command failed inside the runtime: `InternalError`.

The entity failed on the command, or the store could not load it or commit its change. The
message is safe to show a client; the attributes say whether the change may have been saved
(``outcome_unknown``), whether the disk was to blame (``cause``), and whether no retry can
cure it (``permanent``: a bug, whose ``detail`` is for the operator's log alone). The server
turns these into its answers (`agora.server.connection`); this module only builds them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agora.errors import (
    STORE_AWAY,
    STORE_CAUSES,
    AgoraError,
    StoreError,
    ToolError,
    new_correlation_id,
)
from agora.logsafe import entity_failed, loggable, one_line

if TYPE_CHECKING:
    from agora.errors import StoreCause

log = logging.getLogger("agora.runtime.handling")  # the operator's filters name this one


class InternalError(AgoraError):
    """The entity failed on this command; the message is safe to show a client.

    Attributes:
        outcome_unknown: Its commit was in flight when the store failed: the change may or
            may not have been saved (see `agora.errors.StoreError`).
        cause: The disk's part in a failed commit (`agora.errors.StoreCause`), named in
            the message too; None when the disk is not to blame.
        permanent: The store failed for a reason no retry can cure (a constraint, a
            missing column: `agora.errors.StoreError.permanent`), or the entity's
            ``handle`` returned something other than `Effects` (`not_effects`); nothing
            was changed.
            Not logged here: whoever reports it logs ``detail`` once, with its own id.
        detail: What the operator needs (the entity, the database's words, the statement
            of a ``permanent`` failure), never shown to a client; the server logs it with
            the call's correlation id. Empty: the message says it all.
        away: The store was away (unreachable, or no answer in time): a retry may cure it,
            and the answer says the store failed, not the entity.
        told: The store logged the failure's episode once already (`StoreError.told`):
            the server logs this call's line at DEBUG.
        bug: The entity's ``handle`` raised (`handle_raised`): the same command fails the
            same way, so no retry cures it, yet nothing was changed.
        correlation_id: The id the failure was logged under where it happened (with its
            traceback, `entity_failed_here`); the server gives the client this one.
    """

    def __init__(
        self,
        message: str,
        *,
        outcome_unknown: bool = False,
        cause: StoreCause | None = None,
        permanent: bool = False,
        detail: str = "",
        away: bool = False,
        told: bool = False,
        bug: bool = False,
        correlation_id: str = "",
    ) -> None:
        super().__init__(message)
        self.told = told
        self.bug = bug
        self.correlation_id = correlation_id
        self.outcome_unknown = outcome_unknown
        self.cause = cause
        self.permanent = permanent
        self.detail = detail
        self.away = away
        if detail and permanent:  # shown with the traceback of a caller that logs one
            self.add_note(detail)


def store_bug(where: str, what: str, exc: StoreError) -> InternalError:
    """A permanent store failure (``exc``) while ``what`` ("commit failed", "load failed")
    for ``where`` (`entity_name`), as the caller learns it: nothing was changed."""
    return InternalError(
        "internal error; nothing was changed", permanent=True, detail=f"{where} {what}: {exc}"
    )


def not_effects(where: str, command: object, returned: object) -> InternalError:
    """What the caller learns when the ``handle`` of entity ``where`` (`entity_name`)
    returned ``returned`` for ``command`` instead of `agora.runtime.entity.Effects`: a bug
    no retry cures (the same command returns the same), so ``permanent``; nothing was
    changed. Not logged here: the reporter logs ``detail`` once, naming the entity and the
    type it got."""
    return InternalError(
        "internal error; nothing was changed",
        permanent=True,
        detail=f"{where}: handle returned a {type(returned).__name__}, not Effects,"
        f" for {type(command).__name__} (a bug in the entity)",
    )


def entity_name(kind: str, key: str) -> str:
    """Entity ``key`` of ``kind`` as a log names it (the key escaped: callers choose keys)."""
    return f"{kind} {loggable(key)}"


def commit_failed(exc: StoreError, where: str = "the entity", detail: str = "") -> InternalError:
    """What the caller learns of a failed commit: nothing was saved (and why, when the disk
    refused it), or (when the store cannot tell) that the change may or may not have been
    saved; a failure no retry can cure is a bug of ``where`` (`store_bug`). ``detail``: for
    the log line of the call's answer (`store_away`). The message says what happened, not
    what to do: the server's answer adds that (retry, or read the state first), once."""
    if exc.permanent:
        return store_bug(where, "commit failed", exc)
    if exc.outcome_unknown:
        return InternalError(
            "the change may or may not have been saved (the database did not confirm it)",
            outcome_unknown=True,
            detail=detail,
            told=exc.told,
        )
    if exc.cause is not None:
        return InternalError(
            f"the change could not be saved: {STORE_CAUSES[exc.cause]}; nothing was changed",
            cause=exc.cause,
            detail=detail,
        )
    return InternalError(
        "the change could not be saved; nothing was changed",
        detail=detail,
        away=True,
        told=exc.told,
    )


def store_away(store: Any, where: str, doing: str, exc: StoreError) -> str:
    """Account for a transient store failure of entity ``where`` (`entity_name`) while
    ``doing`` it ("loading", "committing"); the detail for the caller's correlation line.

    A store that keeps an outage account (PostgreSQL: `agora.store.outage.Outage`) is told
    there, where calls failing while the database is away are one line, then a count, and
    ``exc`` is marked ``told``: each call's answer is logged with its correlation id and
    this detail at DEBUG only (`agora.server.failed`). A failure the disk caused
    (``cause``: full, read-only, I/O error) is logged by the SQLite store once per episode
    (`agora.store.diskfault`), as is a write dropped while another process held the write
    lock (``told``: `agora.store.lockwait`): here at DEBUG only. Elsewhere it is one ERROR
    line, as before.
    """
    detail = f"{where}: {doing} failed: {one_line(exc)}"
    outage = getattr(store, "outage", None)
    if outage is not None:
        if not exc.told:  # (else the store told the account already)
            outage.failed(f"{doing} an entity", exc, refused=1)
            exc.told = True  # the call's line at DEBUG: the account has it
    elif exc.cause is not None or exc.told:  # the store logs it once per episode
        log.debug("%s", detail)
    else:
        log.error("%s", detail)
    return detail


def entity_failed_here(
    logger: logging.Logger, kind: str, key: str, what: str, *, bug: bool = True
) -> InternalError:
    """What a caller learns when entity (``kind``, ``key``) failed with the exception being
    handled (``what`` went wrong: its ``load``, its ``handle``) before anything was saved.
    Logged here, at ERROR on ``logger`` with the traceback, under a fresh correlation id that
    the client is given too (`InternalError.correlation_id`); the words name no entity kind
    (an internal name). A ``bug`` (``handle`` raised: the same command fails the same way)
    is not retryable; a failed load may be the store's mishap underfoot, which a retry may
    cure."""
    correlation = new_correlation_id()
    entity_failed(logger, kind, key, f"{what} (correlation {correlation})")
    return InternalError("internal error; nothing was changed", bug=bug, correlation_id=correlation)


def handle_raised(
    logger: logging.Logger,
    kind: str,
    key: str,
    command: object,
    exc: Exception,
    where: str = "",
) -> Exception:
    """What the caller learns when the ``handle`` of entity (``kind``, ``key``) raised
    ``exc`` (being handled) on ``command`` (``where``: " in an atomic operation", say): a
    `ToolError` is the refusal it is, as if returned as the reply (its traceback dropped:
    its frames hold the entity, and it is raised again for the caller); anything else is a
    bug (`entity_failed_here`). Either way the entity may be half-mutated: the caller
    reloads it."""
    if isinstance(exc, ToolError):
        exc.__traceback__ = None
        return exc
    return entity_failed_here(logger, kind, key, f"failed on {type(command).__name__}{where}")


def entity_store_failed(
    store: Any, kind: str, key: str, doing: str, exc: StoreError
) -> InternalError:
    """What the callers of entity (``kind``, ``key``) learn when the store failed while
    ``doing`` it ("loading", "probing": reads; "committing": a write). A failure no retry
    can cure is a bug, logged once by whoever reports it (`store_bug`); one a retry may cure
    (the database away) is an event, accounted by `store_away` in one line without a
    traceback."""
    where = entity_name(kind, key)
    if doing != "committing":
        load_refused(store)
    if exc.permanent:
        return store_bug(where, "commit failed" if doing == "committing" else "load failed", exc)
    detail = store_away(store, where, doing, exc)
    if doing == "committing":
        return commit_failed(exc, where, detail)
    return read_failed(kind, exc, detail)


def load_refused(store: Any) -> None:
    """Count, on ``/healthz`` (``store.loads_refused``), a call the store failed before its
    commit: its entity could not be loaded or its copy's version probed. A write call
    refused so never reaches the writes a store counts (`agora.store.refusals`)."""
    refusals = getattr(store, "refusals", None)
    if refusals is not None:
        refusals.load_refused()


def read_failed(what: str, exc: StoreError, detail: str) -> InternalError:
    """What a caller learns when ``what`` (an entity kind, "the entities") could not be
    read for its command because of ``exc`` (a retry may cure it): nothing was changed.
    ``detail``: for the log line of the call's answer (`store_away`)."""
    if exc.cause is not None:  # the disk's part (a WAL index made immutable), said
        said = f"{what} could not be read: {STORE_CAUSES[exc.cause]}; nothing was changed"
        return InternalError(said, cause=exc.cause, detail=detail)
    # The database away (a PostgreSQL outage, a read past commit_timeout): the fixed words a
    # retry may cure, never "internal error", which an agent takes for a bug.
    said = f"{what} could not be read: {STORE_AWAY}"
    return InternalError(said, detail=detail, away=True, told=exc.told)


def unsaved(failure: InternalError) -> InternalError:
    """``failure`` of a load, as the caller of a write learns it: the load was the rerun of
    a command whose change another node's overtook, so its change could not be saved (not
    "could not be read", which told a writer its write had been a read). A bug, or a
    failure that was not the store's, stays as it is."""
    cause = failure.__cause__
    if failure.permanent or not isinstance(cause, StoreError) or cause.permanent:
        return failure
    return commit_failed(cause, detail=failure.detail)
