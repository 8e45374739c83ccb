"""Helpers of the multi-node tests (imported by them; not a test module)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from e2e_process import AgoraProcess


@contextmanager
def stopped_cleanly(nodes: list[AgoraProcess]) -> Iterator[None]:
    """Run the block, then SIGTERM every node still running and check its clean exit."""
    yield
    for node in nodes:
        if node.proc.poll() is None:
            node.assert_clean_exit(node.stop())
