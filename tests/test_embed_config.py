"""A `Config` built in code meets the checks `load_config` makes before `open_server` opens
anything: a reviewer's embedded server with ``max_in_flight=0`` served, and refused every
call forever with nothing saying why."""

from __future__ import annotations

import pytest

from agora.config import Config, PrincipalConfig, config_problem, load_config
from agora.server.embed import open_server


@pytest.mark.parametrize(
    ("setting", "value", "words"),
    [
        ("max_in_flight", 0, "max_in_flight must be at least 1, not 0"),
        ("grace_seconds", -1.0, "grace_seconds must be 0 or more"),
        ("commit_timeout", 0.0, "commit_timeout must be more than 0"),
        ("port", 70000, "port must be between 0 and 65535"),
    ],
)
async def test_open_server_refuses_a_built_config_that_load_config_refuses(
    tmp_path, setting, value, words
):
    db = tmp_path / "agora.db"
    with pytest.raises(ValueError, match=words):
        load_config(db=str(db), **{setting: value})
    config = Config(**{"db": str(db), "port": 0, "toolsets": ["chess"], setting: value})
    with pytest.raises(ValueError, match=f"invalid configuration: {words}"):
        async with open_server(config, listen=False):
            pass  # pragma: no cover - refused before
    assert not db.exists()  # nothing opened


async def test_an_unusable_principal_is_refused_too(tmp_path):
    same = "a" * 64
    principals = [PrincipalConfig(name="a", token_sha256=same),
                  PrincipalConfig(name="b", token_sha256=same)]  # fmt: skip
    config = Config(db=str(tmp_path / "agora.db"), principals=principals)
    problem = config_problem(config)
    assert problem is not None
    assert "same token_sha256" in problem
    with pytest.raises(ValueError, match="same token_sha256"):
        async with open_server(config, listen=False):
            pass  # pragma: no cover - refused before


def test_the_defaults_and_a_loaded_config_have_no_problem(tmp_path):
    assert config_problem(Config()) is None
    assert config_problem(load_config(db=str(tmp_path / "x.db"))) is None


async def test_an_exception_raised_in_the_block_comes_out_as_itself(tmp_path):
    """As the README says: not wrapped in the server's nurseries' groups."""
    config = Config(db=str(tmp_path / "agora.db"), port=0, toolsets=["chess"])
    with pytest.raises(KeyError, match="mine"):
        async with open_server(config, listen=False):
            raise KeyError("mine")


@pytest.mark.parametrize("name", ["commit_timeout", "grace_seconds", "send_timeout"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_nan_and_infinite_seconds_are_refused_from_the_environment(monkeypatch, name, value):
    """``nan`` passed every range check (NaN compares false): AGORA_COMMIT_TIMEOUT=nan killed
    `agora serve` at start with a 59-line traceback, AGORA_GRACE_SECONDS=nan made SIGTERM
    fail, AGORA_SEND_TIMEOUT=nan crashed a slow reader's connection handler."""
    monkeypatch.setenv(f"AGORA_{name.upper()}", value)
    with pytest.raises(ValueError, match=f"AGORA_{name.upper()}: {name} must be a finite number"):
        load_config()


def test_nan_is_refused_from_the_config_file(tmp_path):
    path = tmp_path / "agora.toml"
    path.write_text("send_timeout = nan\n")
    with pytest.raises(ValueError, match="send_timeout must be a finite number, not nan"):
        load_config(path)
    assert config_problem(Config(switch_interval_ms=float("nan"))) == (
        "switch_interval_ms must be a finite number, not nan"
    )


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("port", "abc", "AGORA_PORT: port must be an integer, not 'abc'"),
        ("shared", "maybe", "AGORA_SHARED: shared must be true or false, not 'maybe'"),
        (
            "grace_seconds",
            "soon",
            "AGORA_GRACE_SECONDS: grace_seconds must be a number, not 'soon'",
        ),
    ],
)
def test_a_variable_of_the_wrong_type_is_refused_with_its_text(monkeypatch, name, value, said):
    """Before: ``Expected `int`, got `str``` (a variable is always a string) without the text."""
    monkeypatch.setenv(f"AGORA_{name.upper()}", value)
    with pytest.raises(ValueError, match=f"^AGORA_{name.upper()}: ") as refused:
        load_config()
    assert str(refused.value) == said


def test_a_hash_pasted_with_sha256sum_s_dash_is_told_to_leave_it_out(tmp_path):
    path = tmp_path / "agora.toml"
    digest = "a" * 64
    path.write_text(f'[[principals]]\nname = "ops"\ntoken_sha256 = "{digest}  -"\n')
    with pytest.raises(ValueError, match="leave out the '  -' that sha256sum prints"):
        load_config(path)
    path.write_text('[[principals]]\nname = "ops"\ntoken_sha256 = "secret-token"\n')
    with pytest.raises(ValueError, match="64 hex digits") as refused:
        load_config(path)
    assert "sha256sum prints" not in str(refused.value)


@pytest.mark.parametrize(
    ("setting", "value", "words"),
    [
        ("port", "8903", "port must be an integer, not a string"),
        ("group_commit", "yes", "group_commit must be true or false, not a string"),
        ("toolsets", "chess", "toolsets must be a list, not a string"),
    ],
)
async def test_a_built_config_of_the_wrong_type_is_refused_in_words(
    tmp_path, setting, value, words
):
    # msgspec does not check a Struct built in code: Config(port="8903") failed later with
    # "TypeError: '<=' not supported between instances of 'int' and 'str'".
    db = tmp_path / "agora.db"
    config = Config(**{"db": str(db), setting: value})
    assert config_problem(config) == words
    with pytest.raises(ValueError, match=f"invalid configuration: {words}"):
        async with open_server(config, listen=False):
            pass  # pragma: no cover - refused before
    assert not db.exists()


@pytest.mark.parametrize("level", ["INFO", "Warning", "DEBUG"])
def test_a_log_level_is_taken_in_any_case(tmp_path, monkeypatch, level):
    # Operators write INFO as often as info; it was refused ("must be one of debug, info, ...").
    config = tmp_path / "agora.toml"
    config.write_text(f'log_level = "{level}"\n')
    assert load_config(str(config)).log_level == level.lower()
    monkeypatch.setenv("AGORA_LOG_LEVEL", level)
    assert load_config(None).log_level == level.lower()


async def test_naming_a_toolset_of_your_own_in_the_config_says_how_to_serve_it(tmp_path):
    config = Config(db=str(tmp_path / "agora.db"), toolsets=["notes"])
    with pytest.raises(ValueError, match=r"passed built, not named: open_server\(config, toolsets"):
        async with open_server(config, listen=False):
            pass  # pragma: no cover - refused before


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        pytest.param(
            {"switch_interval_ms": 100_000.0},
            "switch_interval_ms must be at most 5, not 100000",
            id="switch-long",
        ),
        pytest.param(
            {"max_sessions_per_principal": 20_000},
            "max_sessions_per_principal must be at most max_sessions (10000), not 20000",
            id="share-over-default-whole",
        ),
        pytest.param(
            {"max_sessions": 5, "max_sessions_per_principal": 10},
            "max_sessions_per_principal must be at most max_sessions (5), not 10",
            id="share-over-whole",
        ),
        # the default share with a smaller whole is that whole: nothing to refuse
        pytest.param({"max_sessions": 5}, None, id="default-share"),
        pytest.param({"switch_interval_ms": 5.0, "max_sessions_per_principal": 10_000}, None),
    ],
)
def test_a_setting_above_its_most_is_refused(settings, said):
    """switch_interval_ms = 100000 was taken (writes' median went from 1.1 to 31 ms), and so
    was a principal's share of sessions larger than the whole."""
    assert config_problem(Config(**settings)) == said


@pytest.mark.parametrize("names", [["todo"], ["chesss"], ["chess", "nonsense"]])
async def test_config_toolsets_naming_no_built_in_toolset_is_refused_with_toolsets_given(
    tmp_path, names
):
    """Embedder's finding: with ``toolsets=`` given, ``Config.toolsets`` was ignored unread, a
    misspelling or the program's own toolset's name included, though load_config refuses them."""
    from agora.toolsets.base import Toolset

    tool = {"name": "todo_add", "description": "Adds.", "inputSchema": {"type": "object"}}
    mine = Toolset("todo", {"todo_add": lambda call: None}, contract=None, tools=[tool])
    config = Config(db=str(tmp_path / "agora.db"), toolsets=names)
    with pytest.raises(
        ValueError, match="invalid configuration: toolsets: unknown toolset"
    ) as info:
        async with open_server(config, toolsets=[mine], listen=False):
            pass  # pragma: no cover - refused before
    assert "a toolset of your own is passed built, not named" in str(info.value)
    assert not (tmp_path / "agora.db").exists()


def test_a_toolset_of_your_own_named_in_agora_toml_gets_the_hint_config_gets(tmp_path, monkeypatch):
    """Embedder's finding: ``toolsets = ["greeter"]`` in agora.toml (`load_config`, where
    docs/toolset-api.md sends embedders) said only "did you mean `router`?", while the same
    name in ``Config(toolsets=...)`` said how a toolset of one's own is served."""
    hint = "a toolset of your own is passed built, not named: open_server(config, toolsets=[...])"
    assert hint in config_problem(Config(toolsets=["greeter"]))
    toml = tmp_path / "agora.toml"
    toml.write_text('toolsets = ["greeter"]\n')
    with pytest.raises(ValueError, match="unknown toolset `greeter`") as from_file:
        load_config(str(toml))
    assert str(from_file.value).startswith(f"{toml}: unknown toolset")
    assert hint in str(from_file.value)
    monkeypatch.setenv("AGORA_TOOLSETS", "greeter")
    with pytest.raises(ValueError, match="AGORA_TOOLSETS: unknown toolset") as from_env:
        load_config(None)
    assert hint in str(from_env.value)
    # a flag of the `agora` command, which serves the built-in toolsets only: no embedding hint
    with pytest.raises(ValueError, match="--toolsets: unknown toolset") as from_flag:
        load_config(None, toolsets=["greeter"])
    assert "open_server" not in str(from_flag.value)
