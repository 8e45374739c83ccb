"""``[options.<toolset>]`` tables checked against the keys each toolset declares.

The built-in toolsets declare theirs (`Toolset.options`); every ``[options.*]`` example in
the README and docs/ passes the check (the declarations and the documentation agree); a
misspelt key or a wrong type stops `open_server` before it opens the database; a toolset
that declares nothing (an embedder's) gets its table unchecked, as before. agora.toml may
hold an embedder's toolset's table; the server, which knows what it serves, refuses a table
naming no toolset.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import trio

from agora.config import SERVABLE, Config, load_config
from agora.server.app import load_toolsets
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset
from agora.toolsets.options import (
    OptionsError,
    bounded,
    check_options,
    check_toolset_options,
)

ROOT = Path(__file__).parents[1]
BUILT_IN = ("chamber", "chess", "router", "debate", "conformance")


def test_every_built_in_toolset_declares_its_options():
    for toolset in load_toolsets(BUILT_IN):
        assert toolset.options is not None, toolset.name


def _documented_tables() -> list[tuple[str, dict[str, Any]]]:
    """Every ``[options.X]`` table of a TOML example in the README and docs/."""
    tables = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```toml\n(.*?)```", doc.read_text(), re.S):
            options = tomllib.loads(block).get("options", {})
            tables += [(f"{doc.name}: {name}", {name: t}) for name, t in options.items()]
    return tables


def test_every_documented_option_example_is_accepted(tmp_path):
    tables = _documented_tables()
    assert {label.split(": ")[1] for label, _ in tables} >= {"chamber", "router", "debate"}
    toolsets = load_toolsets(BUILT_IN)
    key = tmp_path / "chamber.key"  # the examples' key files are the operator's: one that loads
    key.write_text("5a" * 32)
    for label, options in tables:
        if "signing_key" in options.get("chamber", {}):
            options["chamber"]["signing_key"] = str(key)
        try:
            check_toolset_options(options, toolsets)
        except OptionsError as exc:
            raise AssertionError(f"{label}: {exc}") from exc


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({"rate": 2}, "[options.t]: unknown key `rate`; did you mean `rates`?"),
        pytest.param({"names": "a"}, "[options.t]: names must be a list of strings, not a"),
        pytest.param({"names": ["a", 1]}, "[options.t]: names must be a list of strings"),
        pytest.param({"count": 1.5}, "[options.t]: count must be an integer, not a number"),
        pytest.param({"count": True}, "[options.t]: count must be an integer, not true"),
        pytest.param({"sub": {"dept": 1}}, "[options.t.sub]: unknown key `dept`; did you"),
        pytest.param({"sub": []}, "[options.t]: sub must be a table, not a list"),
        pytest.param({"zzz": 1}, "[options.t]: unknown key `zzz` (known: count, names,"),
    ],
)
def test_a_table_is_checked_key_by_key(values, message):
    spec = {"rates": float, "names": list[str], "count": int, "sub": {"depth": int}}
    with pytest.raises(OptionsError) as refused:
        check_options("t", spec, values)
    assert str(refused.value).startswith(message), refused.value


def test_numbers_and_anything_are_accepted_as_declared():
    spec = {"rate": float, "anything": Any, "table": dict, "flag": bool}
    check_options("t", spec, {"rate": 60, "anything": [1, "a"], "table": {"x": 1}, "flag": False})
    check_options("t", spec, {"rate": 0.5})


async def _nothing(call: ToolCall) -> dict[str, Any]:
    return {}


def _embedded(options: Any) -> Toolset:
    tool = {"name": "mine_noop", "description": "Nothing.", "inputSchema": {"type": "object"}}
    return Toolset("mine", {"mine_noop": _nothing}, contract=None, tools=[tool], options=options)


async def test_a_misspelt_key_stops_the_server_before_it_opens_the_database(tmp_path):
    db = tmp_path / "agora.db"
    config = Config(db=str(db), options={"router": {"workspace_root": ["/srv"]}})
    with trio.fail_after(20), pytest.raises(OptionsError, match="did you mean `workspace_roots`"):
        async with open_server(config, toolsets=load_toolsets(["router"]), listen=False):
            pass
    assert not db.exists()


async def test_a_value_out_of_range_stops_the_server_before_it_opens_the_database(tmp_path):
    # The refill task used to meet it after the start, and end with a traceback.
    db = tmp_path / "agora.db"
    config = Config(db=str(db), options={"chamber": {"room_pool_size": -3}})
    message = r"^\[options.chamber\] room_pool_size must be at least 0, not -3$"
    with trio.fail_after(20), pytest.raises(OptionsError, match=message):
        async with open_server(config, toolsets=load_toolsets(["chamber"]), listen=False):
            pass
    assert not db.exists()


async def test_a_signing_key_that_does_not_load_stops_the_server(tmp_path):
    db = tmp_path / "agora.db"
    key = tmp_path / "chamber.pem"
    key.write_text("not a key\n")
    config = Config(db=str(db), options={"chamber": {"signing_key": str(key)}})
    message = rf"^\[options.chamber\] signing_key {key}: the signing key is neither a PEM"
    with trio.fail_after(20), pytest.raises(OptionsError, match=message):
        async with open_server(config, toolsets=load_toolsets(["chamber"]), listen=False):
            pass
    assert not db.exists()


def test_a_toolsets_own_check_runs_after_the_types_and_its_refusal_is_one_line():
    seen = []

    def check(values: Any) -> None:
        seen.append(dict(values))
        if values.get("rate", 0) < 0:
            raise ValueError("[options.mine] rate must be at least 0, not -1")

    mine = _embedded({"rate": float})
    mine.options_check = check
    check_toolset_options({"mine": {"rate": 2}}, [mine])
    with pytest.raises(OptionsError, match=r"^\[options.mine\]: rate must be a number"):
        check_toolset_options({"mine": {"rate": "x"}}, [mine])  # the types come first
    with pytest.raises(OptionsError, match=r"^\[options.mine\] rate must be at least 0"):
        check_toolset_options({"mine": {"rate": -1}}, [mine])
    assert seen == [{"rate": 2}, {"rate": -1}]


@pytest.mark.parametrize(
    ("value", "above", "message"),
    [
        pytest.param(-5, False, "[options.t] k must be at least 0, not -5", id="int"),
        pytest.param(-0.5, False, "[options.t] k must be at least 0, not -0.5", id="float"),
        pytest.param(0, True, "[options.t] k must be more than 0, not 0", id="above"),
    ],
)
def test_a_range_is_worded_alike_for_every_toolset(value, above, message):
    with pytest.raises(OptionsError) as refused:
        bounded("t", {"k": value}, "k", 1, 0, above=above)
    assert str(refused.value) == message
    assert bounded("t", {}, "k", 7, 0, above=above) == 7


def test_the_documented_signature_of_bounded_is_its_own():
    """toolset-api.md showed ``above=False`` as a positional parameter; it is keyword-only."""
    shown = re.search(
        r"`agora\.toolsets\.options\.bounded\((.*?)\)`",
        (ROOT / "docs/toolset-api.md").read_text(),
        re.S,
    )
    assert shown is not None
    params, star = [], False
    for param in inspect.signature(bounded).parameters.values():
        if param.kind is param.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        default = "" if param.default is param.empty else f"={param.default!r}"
        params.append(param.name + default)
    assert " ".join(shown.group(1).split()) == ", ".join(params)


async def test_a_toolset_that_declares_nothing_gets_its_table_unchecked():
    config = Config(db=":memory:", options={"mine": {"whatever": [1, 2], "x": "y"}})
    with trio.fail_after(20):
        async with open_server(config, toolsets=[_embedded(None)], listen=False) as server:
            assert server.runtime.options("mine") == {"whatever": [1, 2], "x": "y"}
    declared = Config(db=":memory:", options={"mine": {"x": "y"}})
    with trio.fail_after(20), pytest.raises(OptionsError, match="it takes no options"):
        async with open_server(declared, toolsets=[_embedded({})], listen=False):
            pass


def test_router_paths_that_are_not_there_warn_at_start_and_do_not_refuse(tmp_path, caplog):
    (router,) = load_toolsets(("router",))
    assert router.options_check is not None
    profile = tmp_path / "profile.json"
    profile.write_text("{}")
    present = {"workspace_roots": [str(tmp_path)], "personal_profile": str(profile)}
    with caplog.at_level("WARNING", logger="agora.toolsets.router"):
        router.options_check(present)
    assert caplog.records == []
    missing = {
        "workspace_roots": [str(tmp_path), str(tmp_path / "typo")],
        "personal_profile": str(tmp_path / "profle.json"),
        "memory_policy": str(tmp_path),  # a directory, not the policy file
    }
    with caplog.at_level("WARNING", logger="agora.toolsets.router"):
        router.options_check(missing)  # no refusal: each may appear after the start
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 3, said
    assert f"workspace root {tmp_path / 'typo'} is not a directory" in said[0]
    assert f"personal Profile {tmp_path / 'profle.json'} is not a file" in said[1]
    assert f"Memory policy {tmp_path} is not a file: Memory stays off" in said[2]


async def test_an_embedders_toolset_takes_its_table_from_agora_toml(tmp_path):
    # load_config used to refuse the table: "[options.mine] names no toolset; known: ...".
    toml = tmp_path / "agora.toml"
    toml.write_text(f'db = "{tmp_path / "agora.db"}"\n[options.mine]\nrate = 5.0\n')
    config = load_config(toml)
    with trio.fail_after(20):
        async with open_server(config, toolsets=[_embedded({"rate": float})], listen=False) as s:
            assert s.runtime.options("mine") == {"rate": 5.0}


async def test_a_table_naming_no_served_toolset_stops_the_server_with_the_closest_name(tmp_path):
    # It used to start, the toolset silently on its defaults.
    db = tmp_path / "agora.db"
    config = Config(db=str(db), options={"mien": {"rate": 5.0}})
    message = (
        r"^\[options.mien\] names no toolset; did you mean `mine`\? "
        r"\(known: mine, chamber, chess, router, debate, conformance\)$"
    )
    with trio.fail_after(20), pytest.raises(OptionsError, match=message):
        async with open_server(config, toolsets=[_embedded(None)], listen=False):
            pass
    assert not db.exists()


def test_a_built_in_toolsets_table_is_accepted_while_it_is_not_served():
    debate = load_toolsets(["debate"])
    check_toolset_options({"chess": {"anything": 1}, "conformance": {}}, debate, SERVABLE)
    with pytest.raises(OptionsError, match=r"^\[options.zzz\] names no toolset; known: debate,"):
        check_toolset_options({"zzz": {}}, debate, SERVABLE)


async def test_a_toolsets_descriptions_may_depend_on_its_table():
    # The router's tools that cannot run as configured say so first in tools/list.
    def describe(options: Any) -> dict[str, str]:
        return {} if options.get("on") else {"mine_noop": "Off here. Nothing."}

    mine = _embedded({"on": bool})
    mine.describe = describe
    for options, said in (({}, "Off here. Nothing."), ({"on": True}, "Nothing.")):
        config = Config(db=":memory:", options={"mine": options})
        with trio.fail_after(20):
            async with (
                open_server(config, toolsets=[mine], listen=False) as server,
                server.client("/mcp/mine") as client,
            ):
                await client.initialize()
                listed = (await client.request("tools/list", {}))["result"]["tools"]
        assert [tool["description"] for tool in listed] == [said]
    mine.describe = lambda options: {"mine_nop": "Misspelt."}
    message = "toolset mine: its describe hook names 'mine_nop', which none of its tools is named"
    with trio.fail_after(20), pytest.raises(ValueError, match=message):
        async with open_server(Config(db=":memory:"), toolsets=[mine], listen=False):
            pass
