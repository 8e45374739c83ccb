"""What the router's texts say where they suggest a purge: what it deletes, everywhere.

``purge_workflow_memory`` names no workspace: each scope is deleted in every workspace's Memory
and the personal scope's at once. A text that points to a purge says so, and a remembered run
is corrected with feedback, never by purging the history.
"""

from __future__ import annotations

from typing import Final

#: What follows "nothing to roll back to": the way to retire the only revision's rules.
RETIRE_BY_PURGE: Final = (
    " To retire its rules, purge the managed Profiles: purge_workflow_memory scope"
    " managed-profiles-only deletes every managed Profile (managed-personal and every"
    " workspace's managed-workspace-local), with all their revisions and pending proposals, and"
    " keeps the remembered runs (so their candidates are listed as proposed again: reject one"
    " to keep it out for 180 days); all-memory-data with include_managed_profiles also deletes"
    " every remembered run, feedback and rejection."
)


#: What one history-only purge deletes: the caller's Memory has no per-workspace purge.
HISTORY_EVERYWHERE: Final = (
    "purge_workflow_memory scope history-only deletes the remembered runs (and their"
    " feedback) of every workspace and of the personal scope, not one workspace's or one run's"
)


def correct_instead(observation_id: str) -> str:
    """How to correct a remembered run (its observation is stored once): feedback, not a
    purge, which deletes every workspace's history."""
    return (
        f"To correct what is remembered of this run, send record_route_feedback on observation"
        f" {observation_id} (feedback_type rejected counts against the route's candidate,"
        " corrected names the route the user wanted); the stored outcome itself stays. Do not"
        f" purge to record it anew: {HISTORY_EVERYWHERE}."
    )
