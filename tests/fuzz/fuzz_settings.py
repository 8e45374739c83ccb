"""How many cases the hostile-input fuzzer runs.

``AGORA_FUZZ_EXAMPLES`` N sets the hypothesis example count: N for each of the schema-shaped,
mutated and raw-frame tests, N/4 for each of the four envelope variants, and N/40 shaped and
N/40 mutated calls of each tool in ``test_every_tool_is_fuzzed`` (so about 7N cases in all with
59 tools): a small seed by default, so CI stays quick; ``AGORA_FUZZ_EXAMPLES=25000`` is a local
run of about 174,000 cases. ``AGORA_FUZZ_PROGRESS=FILE`` appends the running case count to
FILE every 1,000 cases (a long local run says how far it got).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("AGORA_FUZZ_EXAMPLES", "120"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

_PROGRESS = os.environ.get("AGORA_FUZZ_PROGRESS")
_cases = [0]


def count_case() -> None:
    """Count one fuzz case (and report every 1,000th to ``AGORA_FUZZ_PROGRESS``)."""
    _cases[0] += 1
    if _PROGRESS and _cases[0] % 1000 == 0:
        with open(_PROGRESS, "a") as out:
            out.write(f"{_cases[0]}\n")
