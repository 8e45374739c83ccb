"""Settings that start a server which then refuses every request they concern are refused at
start instead (an operator's findings): an ``allowed_hosts`` entry no Host header can match,
a project grant no topic can carry, and two principals of one name that may do different
things."""

from __future__ import annotations

import hashlib

import pytest

from agora.config import Config, PrincipalConfig, config_problem, load_config
from agora.config_checks import PROJECT_NAME
from agora.toolsets.debate.rules import PROJECT_RE

DIGEST_A, DIGEST_B = "a" * 64, "b" * 64


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("https://agora.example.com", "is a URL: list the host name alone ('agora.example.com')"),
        ("agora.example.com:8443", "has a port: list 'agora.example.com' alone"),
        ("*.example.com", "wildcards are not supported"),
        ("", "allowed_hosts has an empty entry"),
        ("2001:db8::1", "write an IPv6 address in brackets, as a Host header does: '[2001:db8"),
        ("agora_host", "is not a host name"),
        ("http://[::1", "is a URL: list the host name alone"),  # urlsplit refuses it
    ],
)
def test_an_allowed_host_no_request_can_match_is_refused(tmp_path, entry, words):
    with pytest.raises(ValueError, match="allowed_hosts") as info:
        load_config(db=str(tmp_path / "a.db"), allowed_hosts=[entry])
    assert "allowed_hosts: " in str(info.value)
    assert words in str(info.value)


@pytest.mark.parametrize("entry", ["agora.example.com", "Agora.Example.com.", "10.0.0.7", "[::1]"])
def test_host_names_and_addresses_are_taken(entry):
    assert config_problem(Config(allowed_hosts=[entry])) is None


def test_a_project_grant_no_topic_can_carry_is_refused(tmp_path):
    toml = tmp_path / "agora.toml"
    toml.write_text(
        f'[[principals]]\nname = "lead"\ntoken_sha256 = "{DIGEST_A}"\nprojects = ["teamA"]\n'
    )
    with pytest.raises(ValueError, match="is not a project name") as info:
        load_config(toml)
    # (it read "principal 'lead''s projects", a doubled quote)
    assert f"{toml}: the projects of principal 'lead': 'teamA' is not a project" in str(info.value)
    problem = config_problem(Config(anonymous_projects=["Local"]))
    assert problem is not None
    assert problem.startswith("anonymous_projects: 'Local' is not a project name")


def test_two_principals_of_one_name_must_be_allowed_the_same(tmp_path):
    def lead(digest: str, scopes: list[str]) -> PrincipalConfig:
        return PrincipalConfig(name="lead", token_sha256=digest, scopes=scopes, projects=["p"])

    rotating = Config(principals=[lead(DIGEST_A, ["conductor"]), lead(DIGEST_B, ["conductor"])])
    assert config_problem(rotating) is None  # one caller, a token replacing the other
    split = Config(principals=[lead(DIGEST_A, ["conductor"]), lead(DIGEST_B, [])])
    problem = config_problem(split)
    assert problem is not None
    assert problem.startswith("two principals are named 'lead' with different scopes or projects")


def test_the_project_pattern_is_the_debates():
    assert PROJECT_NAME.pattern == PROJECT_RE.pattern


def test_allow_anonymous_false_needs_principals(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"allow_anonymous = false needs \[\[principals\]\]"):
        load_config(db=str(tmp_path / "a.db"), allow_anonymous=False)
    monkeypatch.setenv("AGORA_ALLOW_ANONYMOUS", "false")
    toml = tmp_path / "agora.toml"
    toml.write_text(f'[[principals]]\nname = "ops"\ntoken_sha256 = "{DIGEST_A}"\n')
    assert load_config(toml).allow_anonymous is False


def test_an_unknown_toolset_is_named_with_its_source_and_the_closest_known(tmp_path):
    """An operator's note: it read ``unknown toolsets ['chesss']; known: ...`` (a Python list,
    no source, no suggestion), unlike every other refused setting."""
    path = tmp_path / "agora.toml"
    path.write_text('toolsets = ["chess", "chesss"]\n')
    with pytest.raises(ValueError, match="unknown toolset") as info:
        load_config(path)
    assert str(info.value) == (
        f"{path}: unknown toolset `chesss`; did you mean `chess`?"
        " (known: chamber, chess, router, debate); in a program embedding agora, a toolset of"
        " your own is passed built, not named: open_server(config, toolsets=[...])"
    )
    with pytest.raises(ValueError, match="unknown toolsets") as info:
        load_config(toolsets=["x1", "y2"])
    assert "`x1`, `y2`" in str(info.value)


def test_the_digest_of_an_empty_token_is_refused(tmp_path):
    """An operator's finding: ``printf %s "$TOKEN" | sha256sum`` with $TOKEN unset gives the
    sha256 of the empty string; a principal holding it started, and no request could ever
    be it (an empty bearer token is refused 401)."""
    empty = hashlib.sha256(b"").hexdigest()
    toml = tmp_path / "agora.toml"
    toml.write_text(
        f'allow_anonymous = false\n[[principals]]\nname = "ops"\ntoken_sha256 = "{empty.upper()}"\n'
    )
    with pytest.raises(ValueError, match="sha256 of an empty token") as info:
        load_config(toml)
    assert str(info.value).startswith(f"{toml}: principal 'ops' (principals[0]): token_sha256")
    assert "was $TOKEN set" in str(info.value)


@pytest.mark.parametrize("name", ["", "  "])
def test_a_principal_without_a_name_is_refused(name):
    """An operator's finding: ``name = ""`` started, and its callers' results and records
    said ``"principal": ""``."""
    problem = config_problem(
        Config(principals=[PrincipalConfig(name=name, token_sha256=DIGEST_A, scopes=["operator"])])
    )
    assert problem is not None
    assert problem.startswith(f"principal {name!r} (principals[0]): name is empty;")
    assert "each principal needs a name" in problem
