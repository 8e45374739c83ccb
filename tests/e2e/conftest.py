"""Fixtures for the end-to-end tests: real ``agora serve`` processes on loopback ports.

One shared server (chess, with a configured principal) serves most tests; a test that needs
other settings, or kills its server, starts its own with `start_agora`. Every server is
stopped with SIGTERM and must exit 0 with a shutdown line and no traceback in its log.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# The transport tests' raw keep-alive HTTP client (`http_support.RawHttp`) serves here too.
sys.path.insert(0, str(Path(__file__).parents[1] / "transports"))

from e2e_config import write_config
from e2e_process import AgoraProcess

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


@pytest.fixture(scope="session")
def agora(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgoraProcess]:
    """The shared server: chess toolset, a file database, one known principal."""
    directory = tmp_path_factory.mktemp("agora")
    config = write_config(directory)
    server = AgoraProcess(
        "--db", str(directory / "agora.db"), "--toolsets", "chess", "--config", str(config)
    )
    server.start()
    yield server
    server.assert_clean_exit(server.stop())


@pytest.fixture
def start_agora(tmp_path: Path) -> Iterator[Callable[..., AgoraProcess]]:
    """Start a dedicated server with extra TOML settings; stopped (and checked) at the end."""
    started: list[AgoraProcess] = []

    def start(settings: str = "", *args: str) -> AgoraProcess:
        config = write_config(tmp_path, settings)
        db = tmp_path / f"agora-{len(started)}.db"
        server = AgoraProcess("--db", str(db), "--config", str(config), *args)
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        if server.proc.poll() is None:
            server.assert_clean_exit(server.stop())
