"""A Profile file that is wrong is said in the server's log too, once per problem: the
operator's personal Profile at WARNING, a workspace's at INFO (its model reads the warnings)."""

from __future__ import annotations

import json
import logging

import pytest
from profile_files import profile, write_workspace

LOGGER = "agora.toolsets.router.layers"


def _said(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]


@pytest.fixture
def personal(tmp_path, options):
    path = tmp_path / "personal.json"
    path.write_text("{ not json")
    options["router"]["personal_profile"] = str(path)
    return path


async def test_a_broken_personal_profile_is_logged_once_until_it_changes(router, personal, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    first = await router.plan("Fix the typo")
    await router.plan("Fix the typo")
    said = _said(caplog)
    assert len(said) == 1, said
    level, line = said[0]
    assert level == logging.WARNING
    assert str(personal) in line
    assert first["profile_warnings"][0] in line  # the words the model is given
    caplog.clear()
    personal.write_text(json.dumps(profile("mine")))
    await router.plan("Fix the typo")
    assert _said(caplog) == []  # read cleanly: nothing to say
    personal.write_text("{ not json")
    await router.plan("Fix the typo")
    assert [level for level, _ in _said(caplog)] == [logging.WARNING]  # broken again: said


async def test_a_missing_personal_profile_is_logged_with_its_path(
    router, tmp_path, options, caplog
):
    options["router"]["personal_profile"] = str(tmp_path / "gone.json")
    caplog.set_level(logging.INFO, logger=LOGGER)
    await router.plan("Fix the typo")
    [(level, line)] = _said(caplog)
    assert level == logging.WARNING
    assert "personal-profile-absent" in line
    assert str(tmp_path / "gone.json") in line


async def test_a_broken_workspace_profile_is_logged_at_info_naming_the_root(
    router, tmp_path, options, caplog
):
    root = tmp_path / "repo"
    root.mkdir()
    options["router"]["workspace_roots"] = [str(tmp_path)]
    write_workspace(root, '{"format": "agora-router-profile/1", "format": 2}')
    caplog.set_level(logging.INFO, logger=LOGGER)
    routing = {"workspace_root": str(root), "domains": [], "tags": [], "current_phase_id": None}
    plan = await router.plan("Fix it", routing_context=routing)
    await router.plan("Fix it", routing_context=routing)
    [(level, line)] = _said(caplog)
    assert level == logging.INFO
    assert f"workspace Profile under {root}" in line
    assert "given twice" in line
    assert plan["profile_warnings"][0] in line


async def test_a_sound_profile_logs_nothing(router, tmp_path, options, caplog):
    path = tmp_path / "personal.json"
    path.write_text(json.dumps(profile("mine")))
    options["router"]["personal_profile"] = str(path)
    caplog.set_level(logging.INFO, logger=LOGGER)
    await router.plan("Fix the typo")
    assert _said(caplog) == []
