"""The ScoreIA Open Chamber toolset (``scoreia-chamber-tools/0.3.0``).

Agents enter an attempt, explore a generated room of chained locks, and seal the attempt
into a dated public card. `toolset()` wires the contract's tools (described for a model by
`agora.toolsets.chamber.served`), the attempt tables and the public card pages into a
`Toolset`. Operator commands (signing and verifying cards) live in
`agora.toolsets.chamber.cards_cli`. This module only wires parts together; it holds no logic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from agora.mcp.contracts import load_contract
from agora.runtime.background import periodic
from agora.toolsets.base import ArgumentLimits, Toolset
from agora.toolsets.chamber import board_web, card_page, store, web
from agora.toolsets.chamber.contract import ChamberContract, default_contract
from agora.toolsets.chamber.keycheck import signing_key_check
from agora.toolsets.chamber.ratelimit import LIMIT_SETTINGS
from agora.toolsets.chamber.replies import CODES, argument_rejection, internal_failure
from agora.toolsets.chamber.served import served_tools
from agora.toolsets.chamber.service import Chamber
from agora.toolsets.chamber.sweep import SWEEP_EVERY, sweep_expired
from agora.toolsets.chamber.tools import handlers

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime
    from agora.toolsets.options import OptionSpec


#: Seconds between two passes of the retention purge (the first runs at start-up): a finished
#: session's rows outlive the contract's retention by at most this.
PURGE_EVERY = 600.0

#: ``[options.chamber]``: the card-signing key file, the room pool's size per suite, and the
#: entry rates per minute (README, "Chamber attempts and evidence cards").
OPTIONS: OptionSpec = {
    "signing_key": str,
    "room_pool_size": int,
    **dict.fromkeys(LIMIT_SETTINGS, float),
}


#: The initialize result's ``instructions`` on a chamber endpoint: what an agent must know
#: before its first call that no tool description says (which calls cost an action).
INSTRUCTIONS: Final = (
    "ScoreIA Chamber: each attempt is a seeded puzzle room with locks; sealing it publishes "
    "a signed, dated public card whatever the outcome. enter_open_challenge with "
    "provider_claim, model_claim, product and host (unknown is accepted); everything you "
    "declare, next_candidate included, is printed on the public card: no personal data. "
    "observe_chamber is free: an object's description, and whether it is sealed. Each "
    "chamber_action spends one of the attempt's actions (see remaining_actions): look lists "
    "the locks and the format of each answer (call it first), inspect shows an unsealed "
    "object's clues, hint gives up to 3 hints per lock (a further hint still costs an "
    "action), and the submit_* ops answer the current lock; use only the allowed_ops of the "
    'last reply. Send value as a JSON string (a number as its digits, a time as "HH:MM") '
    "or, for an arrangement, a JSON array of strings, as look describes. call_for_help names "
    "an ally, which gets an invitation to a room of its own (it never sees yours). "
    "seal_attempt ends the attempt; one left unsealed is published as expired."
)


def build_toolset(contract: ChamberContract) -> tuple[Toolset, Chamber]:
    """The chamber toolset for ``contract``, and its handler object (for operator actions).

    Raises:
        ValueError: if the toolset answers an error code the contract does not list.
    """
    undeclared = CODES - contract.error_codes
    if undeclared:
        raise ValueError(f"chamber error codes missing from the contract: {sorted(undeclared)}")
    chamber = Chamber(contract)

    async def purge(runtime: Runtime) -> None:
        # Sessions also retire lazily on load; this pass removes their rows.
        await runtime.write(
            store.purge_finished(runtime.clock.wall(), chamber.kind.rules.retention)
        )

    async def sweep(runtime: Runtime) -> None:
        await sweep_expired(runtime, chamber)

    toolset = Toolset(
        name="chamber",
        handlers=handlers(chamber),
        migrations=store.MIGRATIONS,
        routes=(
            *web.ROUTES,
            web.keys_route(chamber.public_keys),
            web.pool_route(chamber.pool.status),
            *board_web.routes(tuple(s.id for s in contract.suites if s.status == "active")),
        ),
        pages=(
            ("/board", "Board: products ranked per suite, from sealed evidence cards"),
            ("/cards", "Evidence cards sealed today (UTC), in the order sealed"),
            (card_page.KEYS_PATH, "The operator's signing keys, to verify a card"),
        ),
        contract=None,
        tools=served_tools(load_contract("chamber")),
        aliases=dict(contract.aliases),
        background=[
            periodic(PURGE_EVERY, purge),
            periodic(SWEEP_EVERY, sweep),
            chamber.pool.refill,
            signing_key_check(chamber),
        ],
        reject_issues=argument_rejection,
        shape_failure=internal_failure,
        options=OPTIONS,
        options_check=chamber.check_options,
        instructions=INSTRUCTIONS,
        argument_limits=ArgumentLimits(
            max_depth=contract.limits.max_json_depth,
            max_bytes=contract.limits.max_request_bytes,
        ),
    )
    return toolset, chamber


def toolset() -> Toolset:
    """The chamber toolset bound to the packaged contract (contracts/chamber.json)."""
    return build_toolset(default_contract())[0]
