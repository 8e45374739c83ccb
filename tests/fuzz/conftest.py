"""Fixtures of the hostile-input fuzzer: one live server per module, the served tools.

``AGORA_FUZZ_EXAMPLES`` N sets the hypothesis example count: N for each of the schema-shaped,
mutated and raw-frame tests, N/4 for each of the four envelope variants (so 4N cases in all):
a small seed by default, so CI stays quick; ``AGORA_FUZZ_EXAMPLES=25000`` is a 100,000-case
local run.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from fuzz_live import LiveServer
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from collections.abc import Iterator

EXAMPLES = int(os.environ.get("AGORA_FUZZ_EXAMPLES", "120"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path_factory.mktemp("fuzz") / "fuzz.db").start()
    try:
        yield server
    finally:
        server.stop()
