"""The room template files: strict to read, shipped with the package, all of them used.

`template.parse` must refuse, naming the file and the key, anything the Structs do not allow
(a misspelt key, a wrong type) and any name a template uses without defining it, so a typo in
a data file fails the import instead of quietly changing rooms.
"""

from __future__ import annotations

import fnmatch
import importlib.resources
import tomllib
from pathlib import Path

import pytest

from agora.toolsets.chamber import template
from agora.toolsets.chamber.generate import TEMPLATES

ROOT = Path(__file__).parents[2]
ROOMS = importlib.resources.files("agora.toolsets.chamber") / "rooms"
CHRONO = (ROOMS / "chrono.toml").read_text(encoding="utf-8")


def refusal(text: str) -> str:
    with pytest.raises(template.TemplateError) as caught:
        template.parse(text.encode(), "rooms/chrono.toml")
    return str(caught.value)


def test_generation_uses_the_packaged_files_one_per_engine():
    assert template.load_all() == TEMPLATES
    assert set(TEMPLATES) == set(template.FILES)
    assert sorted(p.name for p in ROOMS.iterdir()) == sorted(template.FILES.values())
    assert [len(ts) for ts in TEMPLATES.values()] == [5, 5]


def test_every_template_file_is_package_data():
    # What a non-editable install (a wheel) ships: the setuptools globs under src/agora.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["agora"]
    for name in template.FILES.values():
        path = f"toolsets/chamber/rooms/{name}"
        assert any(fnmatch.fnmatch(path, g) for g in globs), path


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        pytest.param('flavor = "Among', 'flavour = "Among', "unknown field `flavour`", id="obj"),
        pytest.param("optional = true", "optinal = true", "unknown field `optinal`", id="lock"),
        pytest.param('title = "The Clock', 'titel = "The Clock', "`titel`", id="template"),
        pytest.param("size = 6", 'size = "6"', "Expected `int`, got `str`", id="type"),
        pytest.param("[[templates.objects]]", "[[templates.object]]", "`object`", id="table"),
        pytest.param('id = "clockmaker"', "id = [", "", id="not-toml"),
    ],
)
def test_a_key_or_value_the_structs_do_not_allow_names_file_and_key(old, new, says):
    assert old in CHRONO
    message = refusal(CHRONO.replace(old, new, 1))
    assert message.startswith("rooms/chrono.toml: ")
    assert says in message


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        pytest.param(
            'holders = ["wall_clocks"', 'holders = ["wall_clock"', "no object 'wall_clock'",
            id="holder",
        ),
        pytest.param(
            'kind = "time_chain"', 'kind = "time-chain"', "unknown kind 'time-chain'", id="kind"
        ),
        pytest.param(
            'opens_with = "submit_order"', 'opens_with = "submit_ordre"', "'submit_ordre'",
            id="opens-with",
        ),
        pytest.param('id = "journal"', 'id = "workbench"', "object 'workbench' twice", id="object"),
        pytest.param('id = "signal_box"', 'id = "clockmaker"', "'clockmaker' twice", id="template"),
    ],
)  # fmt: skip
def test_a_name_a_template_does_not_define_is_refused(old, new, says):
    assert old in CHRONO
    message = refusal(CHRONO.replace(old, new, 1))
    assert message.startswith("rooms/chrono.toml: ")
    assert says in message


def test_a_long_text_continues_across_lines_without_a_break():
    intro = TEMPLATES["chamber"][0].intro
    assert intro.startswith("Brass gears line the walls")
    assert "\n" not in intro
    assert "  " not in intro
