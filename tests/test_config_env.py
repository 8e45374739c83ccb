"""AGORA_* variables that name no setting: warned about, unless agora or its scripts use them.

The real ``agora serve`` warning is checked in tests/e2e/test_e2e_operator_mistakes.py; here
the wording of each case, and that every AGORA_* name the tree uses (its settings, its
token, the test and CI scripts' switches) is known, so that none of them is ever warned
about in a test run or in CI.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from agora.config import Config
from agora.config_env import NOT_SETTINGS, TEST_PREFIX, unknown_variables

SETTINGS = Config.__struct_fields__
ROOT = Path(__file__).parents[1]
#: The names the tree spells wrong on purpose, as an operator would (or as another program's
#: own), in its examples and in the tests of the warning.
EXAMPLES = {"AGORA_DB_PAHT", "AGORA_LOGLEVEL", "AGORA_APP_ID"}
#: The kinds of file the scan reads ("": scripts such as .ci/run).
READ = (".py", ".sh", ".md", ".toml", ".yml", "")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        pytest.param(
            "AGORA_DB_PAHT",
            "AGORA_DB_PAHT is not an agora setting and is ignored; did you mean AGORA_DB?",
            id="typo",
        ),
        pytest.param(
            "AGORA_LOGLEVEL",
            "AGORA_LOGLEVEL is not an agora setting and is ignored; did you mean AGORA_LOG_LEVEL?",
            id="no-underscore",
        ),
        pytest.param(
            "AGORA_APP_ID", "AGORA_APP_ID is not an agora setting and is ignored", id="unrelated"
        ),
        pytest.param(
            "AGORA_PRINCIPALS",
            "AGORA_PRINCIPALS is ignored: [[principals]] tables are set in the config file only",
            id="table",
        ),
    ],
)
def test_an_unknown_variable_is_said_with_the_setting_it_may_mean(name, said):
    assert unknown_variables(SETTINGS, {name: "x", "HOME": "/root"}) == [said]


def test_settings_the_token_and_the_suites_switches_are_not_said():
    environ = {f"AGORA_{s.upper()}": "x" for s in SETTINGS if s not in ("principals", "options")}
    environ.update(dict.fromkeys(NOT_SETTINGS, "1"))
    environ["AGORA_TEST_ANYTHING"] = "1"
    assert unknown_variables(SETTINGS, environ) == []


def _names_in_the_tree() -> dict[str, str]:
    """Every AGORA_* name written in the checkout's code, scripts and docs: name -> a file."""
    found: dict[str, str] = {}
    places = [ROOT / d for d in ("src", "tests", "scripts", "bench", "docs", ".ci")]
    files = [ROOT / "README.md"] + [p for d in places if d.is_dir() for p in d.rglob("*")]
    for path in files:
        if not path.is_file() or path.suffix not in READ:
            continue
        if "egg-info" in str(path) or "__pycache__" in str(path):
            continue
        for name in re.findall(r"\bAGORA_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(errors="replace")):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_agora_variable_the_tree_uses_is_known():
    names = _names_in_the_tree()
    assert "AGORA_INSTALL_ONLY" in names  # the scan reaches the scripts
    assert "AGORA_FUZZ_EXAMPLES" in names  # and the tests
    settings = {f"AGORA_{f.name.upper()}" for f in msgspec.structs.fields(Config)}
    unknown = {
        name: where
        for name, where in names.items()
        if name not in settings | NOT_SETTINGS | EXAMPLES and not name.startswith(TEST_PREFIX)
    }
    assert unknown == {}, "add them to agora.config_env.NOT_SETTINGS"
