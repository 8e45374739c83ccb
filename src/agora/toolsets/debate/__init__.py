"""Structured multi-agent debate (SHAMPOO debate coordination), part 1.

Topics with roles bound to caller-owned sessions, append-only messages with addressed
delivery, durable (ts, msg_id) cursors, push wake-ups (`debate_signal_wait`), the lifecycle
INIT -> ACTIVE -> RESOLVED -> ARCHIVED, and lanes. Each topic is one actor (`topic.Topic`).
This module only wires the parts together: it lists the contract's tools that have a
handler, so nothing unimplemented is ever served, and widens each outputSchema with the
contract's shared ``refusal`` (`replies.with_refusal`).
"""

from __future__ import annotations

from typing import Final

from agora.mcp.contracts import load_contract
from agora.toolsets.base import Toolset
from agora.toolsets.debate.handlers.maintenance import OPTIONS, check_options, phase_timeout_task
from agora.toolsets.debate.handlers.reads import index_task
from agora.toolsets.debate.handlers.resources import RESOURCES
from agora.toolsets.debate.replies import argument_rejection, internal_failure, with_refusal
from agora.toolsets.debate.sql import MIGRATIONS
from agora.toolsets.debate.tools import HANDLERS

#: The initialize result's ``instructions`` on the debate endpoint: the first calls, and what
#: no tool description says (that only an addressed post reaches an inbox, who a session
#: belongs to, so which agents need their own token).
INSTRUCTIONS: Final = (
    "Structured debate: topics whose roles are bound to sessions you own. To open a topic, call "
    "debate_init (metadata_json with a priority_lane P0..P7 and a priority_reason; it takes no "
    "session_id argument): each roles_json entry names a session you opened with "
    "debate_session_open, or omits session_id to have one minted for you (its id is in the "
    "reply's seeded_bindings), or sets it to null to leave the role for a participant. To take a "
    "role on a topic someone else opened, get its topic_id from whoever opened it (out of band: "
    "debate_work_queue does not list a topic you hold no role in, and reads refuse it), open a "
    "session with debate_session_open, then debate_bind_role with that topic_id and the role left "
    "for you. Once debate_state has moved the topic from INIT to ACTIVE, post with "
    "debate_post_with_recipients, naming in addressed_to_csv the roles (or session ids) that must "
    "receive the message: a debate_post is a broadcast that reaches no inbox (only debate_read "
    "and debate_search show it). Receive what is addressed to you with debate_signal_wait (it "
    "answers the same messages again until your cursor moves), then debate_signal_advance to the "
    "last msg_id you handled. On a debate/v1 topic, the move to ACTIVE starts the phase clock: "
    "each phase (BLIND_CLAIM, DEBATE, ADJUDICATE) has phase_timeout_seconds (default 300) from "
    "its start, shown as phase_deadline_at in debate_protocol_state, and a phase still open at "
    "its deadline moves the debate to STALEMATE (phase_timeout); post the blind CLAIM with "
    "debate_post_with_recipients as well: a CLAIM posted with debate_post still uses up the "
    "role's one CLAIM. A judge gives debate_judge_verdict on both projections (AB and BA) with "
    'the same decision, word for word (e.g. "PRO wins"): the verdicts agree only when '
    "winner_msg_id and decision are both equal, and a split ends the debate in STALEMATE. A "
    "debater (blind role) does not close its own debate: until the protocol is STOPPED, STALEMATE "
    "or ESCALATED, only a role outside the blind pair, such as the conductor, held by a principal "
    "that holds no blind role of the topic, moves the topic to RESOLVED, which stops the protocol "
    "too. A session belongs to the principal of the bearer "
    "token that opened it, and every caller without a token is the same principal: the two blind "
    "roles of a debate/v1 topic, and a judge, each need a token of their own, or one can read the "
    "other's blind claim and take over its role (and a principal holding a blind role may not "
    "judge; one holding both blind roles may try the server alone, but its claims are not blind)."
)


def toolset() -> Toolset:
    """The debate toolset: the implemented tools of contracts/debate.json and their tables."""
    contract = load_contract("debate")
    refusal = contract.data["refusal"]
    tools = [
        with_refusal(tool.to_mcp(), refusal)
        for tool in contract.tools.values()
        if tool.name in HANDLERS
    ]
    return Toolset(
        name="debate",
        handlers=HANDLERS,
        migrations=MIGRATIONS,
        contract=None,
        tools=tools,
        reject_issues=argument_rejection,
        shape_failure=internal_failure,
        resources=RESOURCES,
        background=[phase_timeout_task, index_task],
        options=OPTIONS,
        options_check=check_options,
        instructions=INSTRUCTIONS,
    )
