"""Several ``agora serve`` nodes on loopback sharing one PostgreSQL database (a fresh schema).

`cluster` starts N real processes (``--db postgresql://...``) and stops them at the end; the
tests talk to them with agora's own WebSocket client. Needs AGORA_TEST_PG (see tests/conftest).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "e2e"))

from e2e_process import AgoraProcess

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@pytest.fixture
def cluster(pg_url: str) -> Iterator[Callable[..., list[AgoraProcess]]]:
    """``cluster(n, *args)``: start ``n`` nodes on the test's database; all stopped at the end."""
    started: list[AgoraProcess] = []

    def start(n: int, *args: str) -> list[AgoraProcess]:
        nodes = [AgoraProcess("--db", pg_url, *args) for _ in range(n)]
        for node in nodes:
            node.start()
            started.append(node)
        return nodes

    yield start
    for node in started:
        if node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()
