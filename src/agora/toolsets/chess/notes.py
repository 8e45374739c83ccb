"""A move's note as a reader is shown it: on the page, in the PGN and in the agent's replies.

A note is free text from the other player. Unicode's bidirectional controls (the override
U+202E, embeddings, isolates and the direction marks) would let it reorder how text around
it, or its own words, look ("mates .lanogaid eht no" shown as "on the diagonal"), so they
are taken out; right-to-left letters still show right to left by their own direction. An
agent reads a reply as text, and a client may show it: the human's note its replies echo
(``lastMove.note``) loses them the same way; the agent's own note is echoed as it wrote it.
A note with nothing left to read once they are out (only controls, or only spaces) is no
note: None, as if none was written, never an empty string.
The stored note keeps every character. Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Final

#: ALM, LRM, RLM, LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI.
BIDI_CONTROLS: Final = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown_note(note: str | None) -> str | None:
    """``note`` without bidirectional controls; None when nothing readable is left."""
    if note is None:
        return None
    cleaned = BIDI_CONTROLS.sub("", note)
    return cleaned if cleaned.strip() else None
