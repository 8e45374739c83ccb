"""The debate tool table: tool name -> handler, and nothing else.

Only the tools listed here are served (`agora.toolsets.debate.toolset` lists exactly these
from the contract), so tools/list never shows one that does not work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from agora.toolsets.debate.handlers import (
    inbox,
    maintenance,
    messages,
    protocol,
    queue,
    reads,
    roster,
    topics,
    workers,
)

if TYPE_CHECKING:
    from agora.toolsets.base import Handler

HANDLERS: Final[dict[str, Handler]] = {
    "debate_session_open": roster.debate_session_open,
    "debate_session_list": roster.debate_session_list,
    "debate_init": topics.debate_init,
    "debate_add_role": roster.debate_add_role,
    "debate_bind_role": roster.debate_bind_role,
    "debate_rotate_session": roster.debate_rotate_session,
    "debate_list_bindings": roster.debate_list_bindings,
    "debate_post": messages.debate_post,
    "debate_post_with_recipients": messages.debate_post_with_recipients,
    "debate_escalate": messages.debate_escalate,
    "debate_compact": messages.debate_compact,
    "debate_advance_watermark": messages.debate_advance_watermark,
    "debate_read": reads.debate_read,
    "debate_search": reads.debate_search,
    "debate_signal_check": inbox.debate_signal_check,
    "debate_signal_wait": inbox.debate_signal_wait,
    "debate_signal_advance": inbox.debate_signal_advance,
    "debate_state": topics.debate_state,
    "debate_close_topic": topics.debate_state,
    "debate_set_lane": topics.debate_set_lane,
    "debate_reconcile_project": topics.debate_reconcile_project,
    "debate_message_claim_reclaim": topics.debate_message_claim_reclaim,
    "debate_work_queue": queue.debate_work_queue,
    "debate_protocol_state": protocol.debate_protocol_state,
    "debate_judge_prepare": protocol.debate_judge_prepare,
    "debate_judge_verdict": protocol.debate_judge_verdict,
    "debate_protocol_maintain": maintenance.debate_protocol_maintain,
    "debate_worker_claim": workers.debate_worker_claim,
    "debate_worker_reclaim": workers.debate_worker_reclaim,
    "debate_trigger_dry_run": workers.debate_trigger_dry_run,
}
