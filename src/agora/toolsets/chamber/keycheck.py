"""At a node's start, a warning when the nodes sharing its database sign cards with other keys.

Every node reads its own ``signing_key`` (`agora.toolsets.chamber.signing`). Nodes started on
one database with different keys all run: each card then carries the key id of whichever node
sealed it, and a verifier that trusts one key refuses the others' cards. Nothing stops that
(a rotation is a legitimate change of key), so a node on a shared store says so once at start:
the cheapest signal that other nodes sign with another key is the key ids of the cards sealed
through the database since yesterday (UTC), one indexed read. A node alone on its file does
not check: a key that differs from yesterday's cards there is a rotation. A node with no key
on a database whose other nodes sign is told so too: its cards would stay unsigned. Nodes started
together before any card was sealed are not caught; their cards show it (`/keys` lists every
key that signed one). Only reads; never refuses to start.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING

from agora.runtime.background import BackgroundTask, node_local
from agora.toolsets.chamber import store

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime
    from agora.toolsets.chamber.service import Chamber

log = logging.getLogger("agora.toolsets.chamber")


def signing_key_check(chamber: Chamber) -> BackgroundTask:
    """The node-local background task that compares this node's signing key with the key
    ids of the cards sealed through the database since yesterday (UTC), once, at start: a
    WARNING naming both when they differ, else an INFO line naming this node's key."""

    @node_local
    async def signing_key_check(runtime: Runtime) -> None:
        if not runtime.store.shared:
            return
        signer, broken = await chamber.signer(runtime)
        if broken:  # (said already, as an ERROR naming the key file)
            return
        since = f"{runtime.clock.wall() - dt.timedelta(days=1):%Y-%m-%d}"
        used = await runtime.read(lambda conn: store.key_ids_since(conn, since))
        if signer is None:
            if used:  # the others sign: this node's cards would be the unsigned ones
                log.warning(
                    "chamber: this node has no signing_key, but cards sealed through this"
                    " database since %s were signed with %s: the cards this node seals stay"
                    " pending_signature; give every node sharing the database the same"
                    " signing_key",
                    since,
                    " and ".join(used),
                )
            return
        others = [key for key in used if key != signer.key_id]
        if others:
            log.warning(
                "chamber: this node signs cards with key %s, but cards sealed through this"
                " database since %s were signed with %s: give every node sharing the"
                " database the same signing_key, or each card's key id depends on the node"
                " that sealed it",
                signer.key_id,
                since,
                " and ".join(others),
            )
        else:
            log.info("chamber: this node signs cards with key %s", signer.key_id)

    return signing_key_check
