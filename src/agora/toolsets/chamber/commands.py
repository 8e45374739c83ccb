"""The commands a chamber attempt accepts, as tagged msgspec Structs.

Tool handlers build these after validating identity; the attempt entity applies them one at
a time. ``caller`` names the principal behind a command: an attempt entered by a named
principal answers anyone else as if it did not exist. Signing keys travel inside `Seal` and
`Quarantine` as already-loaded `Signer` objects (loading a key is I/O, done by the caller).
This module only declares data.

Every command is made for one call and nothing it holds refers back to it, so none is ever
part of a reference cycle: ``gc=False`` keeps them out of the cyclic collector's count (what
makes a young collection between two ticks, `agora.server.heap`) and its scans.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Enter(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Create the attempt (fails if the handle is taken).

    ``identity`` holds the declared claims (provider_claim, product, product_plan,
    model_claim, host, host_version, origin); ``seed_salt`` blinds the seed commitment.
    """

    suite_id: str
    generation: str
    engine: str
    seed: str
    seed_salt: str
    identity: dict[str, str]
    assurance: str
    preflight: dict[str, bool] | None = None
    principal: str = "anonymous"
    via_alias: bool = False
    seed_source: str = "server"
    #: The room of ``seed``, already built (from the room pool), or None to build it.
    room: Any = None
    #: The transcript's genesis head for this seed and salt, if already computed (the
    #: pool's), else empty: the attempt computes it.
    head: str = ""
    #: The room's part of the reply, rendered by the pool (`opening.Opening`), or None.
    opening: Any = None


class Observe(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Read one object's surface; consumes no action."""

    object: str
    caller: str = "anonymous"


class Act(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Perform one bounded action (look, inspect, hint or a submit op)."""

    op: str
    object: str | None = None
    value: str | list[str] | None = None
    expected_action_index: int | None = None
    caller: str = "anonymous"


class CallForHelp(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Name an ally for a separate future attempt, with the fresh seed it should use."""

    ally: str
    seed: str
    caller: str = "anonymous"


class Seal(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Seal the attempt and publish its card (idempotent).

    ``signer`` is a loaded `agora.toolsets.chamber.signing.Signer` or None;
    ``key_broken`` says a key was configured but could not be loaded.
    """

    next_candidate: str | None = None
    include_export_bundle: bool = False
    expected_action_index: int | None = None
    signer: Any = None
    key_broken: bool = False
    caller: str = "anonymous"


class Quarantine(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Operator: seal the attempt as quarantined (found cheating); its card says so."""

    reason: str
    signer: Any = None


class Expire(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Server: publish the card of an attempt whose TTL passed while unsealed (else nothing)."""

    signer: Any = None


Command = Enter | Observe | Act | CallForHelp | Seal | Quarantine | Expire
