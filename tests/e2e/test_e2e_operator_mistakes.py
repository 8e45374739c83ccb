"""Mistakes an operator makes on the command line, each said in words they can act on.

Each case runs the real ``agora`` console script: a flag a subcommand does not take is
refused with that subcommand's usage (its flags listed), exit status 2.
"""

from __future__ import annotations

import pytest
import trio
from e2e_process import run_agora

TIMEOUT = 20


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        pytest.param(["serve", "--bogus"], "usage: agora serve ", id="serve"),
        pytest.param(["stdio", "--bogus"], "usage: agora stdio ", id="stdio"),
        pytest.param(
            ["cards", "sign", "--key", "k", "--bogus"], "usage: agora cards sign ", id="sign"
        ),
        pytest.param(["call", "url", "tool", "{}", "extra"], "usage: agora call ", id="call"),
    ],
)
async def test_an_unknown_flag_shows_its_subcommands_usage(args, usage):
    with trio.fail_after(TIMEOUT):
        done = await run_agora(*args)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, lines
    assert lines[0].startswith(usage), lines  # its own flags, not the top level's list
    assert lines[-1].startswith(f"{usage.removeprefix('usage: ').rstrip()}: error:"), lines
    assert "unrecognized arguments: " in lines[-1], lines
