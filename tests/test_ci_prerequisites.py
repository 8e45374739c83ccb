"""The suite's rule for missing prerequisites (tests/conftest.py): skip locally, fail in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PROBE = """
import pytest
{module_level}

@pytest.mark.skipif(True, reason="needs: a marker prerequisite")
def test_marked():
    pass

def test_inline():
    pytest.skip("needs: an inline prerequisite")

def test_ordinary_skip():
    pytest.skip("not a prerequisite")
"""


@pytest.fixture
def probe(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile(test_probe=PROBE.format(module_level=""))
    pytester.makepyfile(
        test_module=PROBE.format(
            module_level='pytest.importorskip("no_such_module_x", reason="needs: a module")'
        )
    )
    return pytester


def test_outside_ci_a_missing_prerequisite_skips_with_its_reason(probe, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = probe.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(["*needs: a module*", "*needs: an inline prerequisite*"])


def test_under_ci_a_missing_prerequisite_fails_but_an_ordinary_skip_does_not(probe, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = probe.runpytest("-p", "no:cacheprovider", "test_probe.py")
    result.assert_outcomes(failed=1, errors=1, skipped=1)
    result.stdout.fnmatch_lines(["*CI=true and a prerequisite is missing (needs: an inline*"])
    module = probe.runpytest("-p", "no:cacheprovider", "test_module.py")
    assert module.ret != 0
    module.stdout.fnmatch_lines(["*CI=true and a prerequisite is missing (needs: a module)*"])
