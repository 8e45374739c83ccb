"""JSON decoded with no key given twice: the router's files (Profiles, Memory policies) and the
chamber's cards as `agora cards verify` reads them.

RFC 8785 forbids an object that names one key twice, and ``json.loads`` keeps the last of
them in silence: which one the author meant is not ours to guess, so such a file is refused
(`DuplicateKey`, naming the key) rather than read.
"""

from __future__ import annotations

import json
from typing import Any


class DuplicateKey(ValueError):
    """An object names a key twice; ``args[0]`` is the key."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            raise DuplicateKey(key)
        seen.add(key)
    return dict(pairs)


def loads(text: str | bytes) -> Any:
    """``text`` decoded as JSON.

    Raises:
        DuplicateKey: an object in it names one key twice (a `ValueError`: catch it first).
        ValueError: it is not JSON.
    """
    return json.loads(text, object_pairs_hook=_pairs)
