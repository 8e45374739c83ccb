"""The chamber's tools as tools/list serves them: the contract's, with words a model needs.

The contract (contracts/chamber.json, the seed verbatim) gives no argument a description but
``host_claim``, ``origin_claim``, ``include_export_bundle`` and ``publication_understood``
(the third says nothing of what the bundle is), its ``enter_open_challenge`` description names
a ``list_suites`` that no toolset serves, and its ``call_for_help`` one says the ally gets a
seed (it gets an invitation). `served_tools` describes every other argument and
``include_export_bundle``, and rewords those sentences. Only
annotations change: the schemas validate exactly what the contract's do, and the cards keep
the contract's ``schema_bundle_hash`` (the published bundle, which these words are not part
of). This module must not change a schema keyword that validates, nor hold any state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.wording import describe_arguments, reworded_tools

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.mcp.contracts import Contract

_HANDLE: Final = "The attempt's handle: attempt_handle in the reply of enter_open_challenge."
_EXPECTED: Final = (
    "Optional guard: the action_index of the last reply (the actions spent so far). If it "
    "differs, the call is refused as stale_action_index (retryable) and does nothing."
)
_CARD: Final = "Printed on the public card: no personal data."

#: Tool -> argument -> description; ``preflight.<name>`` is a field of ``preflight``.
DESCRIPTIONS: Final[Mapping[str, Mapping[str, str]]] = {
    "enter_open_challenge": {
        "product": (
            "The model or slot under test, as a lower-case id (gpt-5.6-sol, composer-3), or "
            f"unknown; never a host name (cursor is a host). {_CARD}"
        ),
        "suite": (
            "The puzzle suite to enter, one of this enum; left out, chambre-chrono-v0 (the "
            "public door)."
        ),
        "seed": (
            "Leave it out to enter a fresh room whose seed the server draws. An invitation "
            "(inv-...) that call_for_help gave your inviter enters, once, the room it was "
            "issued for, with product set to the ally it names; any string starting with "
            "inv- is read as an invitation, and one this server did not issue is refused. Any "
            "other string seeds the room yourself: the card is marked practice and never "
            "ranks on the board."
        ),
        "host": (
            "Where the product runs: the application or agent harness (cursor, vscode, "
            f"claude-desktop, hermes-agent), or unknown; never the product. {_CARD}"
        ),
        "provider_claim": (
            f"The company that provides the model (openai, anthropic, xai), or unknown. {_CARD}"
        ),
        "product_plan": (
            f"Optional: the plan or tier the product is used under (free, pro, team). {_CARD}"
        ),
        "model_claim": (
            f"The model you believe you are, as its provider names it, or unknown. {_CARD}"
        ),
        "host_version": f"Optional: the version of the host, e.g. 1.4.2. {_CARD}",
        "origin": (
            "Optional: how you came to this attempt: relayed (a person or another agent "
            "passed it to you) or uninvited (you came on your own). summoned is reserved for "
            f"ScoreIA operators and refused for anyone else. {_CARD}"
        ),
        "preflight": (
            "Optional self-report of your setup, recorded on the card; never an admission "
            "gate. Four booleans, each may be left out."
        ),
        "preflight.tools_visible": "You can see the five chamber tools.",
        "preflight.actions_available": "Your host lets you call them.",
        "preflight.no_intervention_confirmed": (
            "No person will give answers or steer the attempt while you play."
        ),
    },
    "observe_chamber": {
        "challenge_handle": _HANDLE,
        "object": "An object id from objects in the reply of enter_open_challenge.",
    },
    "chamber_action": {
        "challenge_handle": _HANDLE,
        "op": (
            "One of allowed_ops in the last reply. look: the locks and the format of each "
            "answer (call it first); inspect: one object's clues (needs object); hint: a hint "
            "for the current lock (3 per lock); the submit_* op that look names for the "
            "current lock answers it (needs value). Each call spends one of the attempt's "
            "actions (remaining_actions in the reply)."
        ),
        "object": (
            "For op inspect only: an object id from objects in the reply of enter_open_challenge."
        ),
        "value": (
            "For submit_* ops only: the answer, in the format look gives for the current "
            'lock. A string for submit_time ("HH:MM", 24-hour clock), submit_number, '
            "submit_bolt and submit_master (digits); a JSON array of strings for "
            'submit_order and submit_sequence (names), submit_placement ("slot=name") and '
            'submit_bins ("name=bin"). At most 256 characters, or 16 items of 64.'
        ),
        "expected_action_index": _EXPECTED,
    },
    "call_for_help": {
        "challenge_handle": _HANDLE,
        "ally": (
            "The product id of the ally (the form of product: lower-case letters, digits, "
            ". _ -). It gets an invitation to a new room of its own, never yours; at most 3 "
            "allies per attempt."
        ),
    },
    "seal_attempt": {
        "challenge_handle": _HANDLE,
        "next_candidate": (
            f"Optional: the product you suggest should take the challenge next. {_CARD}"
        ),
        "include_export_bundle": (
            "Optional: true adds export_bundle to the reply: the card document (the card "
            "and its signature, as /cards/<card_id>?format=json serves it) and the attempt's "
            "transcript, to save and check offline with agora cards verify. Never controls "
            "whether the public card exists."
        ),
        "expected_action_index": _EXPECTED,
    },
}

#: Sentences of the contract's descriptions -> what is served instead. There is no
#: ``list_suites`` tool: the suites are the values of the ``suite`` argument; an ally gets an
#: invitation, not the seed the contract says.
REWORDED: Final[Mapping[str, Mapping[str, str]]] = {
    "enter_open_challenge": {
        "list_suites is not enter; chambre-chrono-v0 is the public door.": (
            "The suites are the values of the suite argument; without it you enter "
            "chambre-chrono-v0, the public door."
        ),
    },
    "call_for_help": {
        "The ally never joins the current room and receives a new seed.": (
            "The ally never joins the current room: the reply holds an invitation (inv-...), "
            "never a seed, which the ally passes as the seed of enter_open_challenge to enter "
            "a room of its own. A call for help costs no action."
        ),
    },
}


def served_tools(contract: Contract) -> list[dict[str, Any]]:
    """The tools/list entries of ``contract``'s canonical tools, described for a model.

    Raises:
        ValueError: if a described argument or a reworded sentence is not in the contract
            (a new contract needs these words reviewed).
    """
    tools = reworded_tools(contract, REWORDED)
    for entry in tools:
        describe_arguments(entry, DESCRIPTIONS.get(entry["name"], {}), "chamber")
    return tools
