"""``agora --help`` and each command's: what it takes, how it exits, where its settings are.

An operator with only the installed package reads these: ``agora serve --help`` used to list
its 8 flags and nothing else (no description, no word of ``--config``, the ``AGORA_*``
variables or the settings that are not flags), and ``agora`` alone ended with argparse's
"the following arguments are required: command".
"""

from __future__ import annotations

import argparse

import pytest

from agora.cli import build_parser, main

#: Where the settings are, as the help of the commands that read them says it.
SETTINGS = ["--config agora.toml", "AGORA_<NAME> environment variables", "AGORA_LOG_LEVEL",
            "log_level, grace_seconds, allowed_hosts, allow_anonymous", "[[principals]]",
            "README.md, section Configuration", "docs/options.md"]  # fmt: skip


def subcommands() -> list[str]:
    actions = build_parser()._subparsers._group_actions  # type: ignore[union-attr]
    sub = next(a for a in actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_every_subcommand_has_help(capsys):
    names = subcommands()
    assert {"serve", "stdio", "call"} <= set(names)
    for name in ["", *names]:
        argv = [name, "--help"] if name else ["--help"]
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: agora {name}".rstrip()), out
        assert "``" not in out, out  # help is read in a terminal: no reST markup


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        pytest.param(["cards", "sign"], ["--key FILE", "file holding the Ed25519 private key",
                                         "(default ./agora.db)"], id="cards-sign"),
        pytest.param(["cards", "verify"], ["export bundle", "transcript"], id="cards-verify"),
        pytest.param(["call"], ["AGORA_TOKEN", "isError", "3 when the server answered with a"
                                " JSON-RPC error"], id="call"),
        pytest.param(["serve"], ["Serve MCP over WebSocket and Streamable HTTP", "grace_seconds",
                                 *SETTINGS], id="serve"),
        pytest.param(["stdio"], SETTINGS, id="stdio"),
        pytest.param([], ["serve MCP over WebSocket and HTTP", *SETTINGS], id="agora"),
    ],
)  # fmt: skip
def test_help_says_what_the_command_takes_and_how_it_exits(capsys, argv, said):
    """A documentation pass found ``--key`` read as an inline key (it names a file), no
    ``--db`` default, bundles missing from ``verify`` and ``call``'s exit status unsaid."""
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    out = " ".join(capsys.readouterr().out.split())  # as wrapped to any terminal width
    for words in said:
        assert words in out, out


@pytest.mark.parametrize("argv", [["serve"], ["stdio"], []])
def test_help_says_which_settings_no_environment_variable_sets(capsys, argv):
    """A tester's finding: the help said "AGORA_<NAME> environment variables (one per
    setting ...)", though AGORA_PRINCIPALS is ignored: the tables are the config file's."""
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "one per setting:" not in out, out
    assert (
        "AGORA_<NAME> environment variables (e.g. AGORA_PORT=9000, AGORA_LOG_LEVEL=warning;"
        " lists comma-separated: one per setting but the tables, [[principals]] and"
        " [options.<toolset>], which only the config file sets), then"
    ) in out, out
    assert "sets: AGORA_PORT" not in out, out  # the examples never read as file-only ones


def test_agora_alone_shows_the_commands_and_where_the_settings_are(capsys):
    assert main([]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("usage: agora "), err
    assert "serve MCP over WebSocket and HTTP on one port" in err, err
    assert "README.md, section Configuration" in err, err
    assert "arguments are required" not in err, err
