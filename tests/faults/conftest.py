"""Fault tests: agora as a subprocess under the bench's mixed load, killed and starved.

The load is ``bench/mixed.py`` (the same actors ``python -m bench mixed`` runs), so the bench
directory joins ``sys.path`` here; its modules import each other as siblings.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
