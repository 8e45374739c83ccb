"""docs/router.md documents exactly the refusal codes the router can answer."""

from __future__ import annotations

import re
from pathlib import Path

from agora.toolsets.router.replies import REFUSAL_CODES

DOC = Path(__file__).parents[2] / "docs" / "router.md"


def test_every_refusal_code_is_documented_and_nothing_else():
    table = DOC.read_text().split("## Refusal codes", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    documented = {code for row in rows for code in re.findall(r"`([a-z-]+)`", row)}
    assert documented == REFUSAL_CODES | {"invalid-arguments", "internal-error"}


def test_the_readmes_evidence_digest_example_is_what_a_gate_expects():
    from agora.toolsets.router.progress import evidence_digest

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    refs = ["sha256:" + "b" * 64, "sha256:" + "a" * 64, "sha256:" + "b" * 64]
    assert f"whose digest is\n`{evidence_digest(refs)}`" in readme


def test_the_docs_quote_the_note_that_names_the_next_writes_versions():
    from agora.toolsets.router.guidance import next_write

    note = next_write(1, 1)
    for doc in (DOC, Path(__file__).parents[2] / "README.md"):
        assert note in " ".join(doc.read_text().split()), doc


async def test_the_sessions_totals_are_asked_with_a_null_run_as_the_docs_say(router):
    """Reviewer finding: docs/router.md said "without workflow_run_id", which the schema
    requires (nullable): a call without it is refused."""
    from router_driver import INPUTS, ctx

    text = " ".join(DOC.read_text().split())
    assert "without `workflow_run_id`" not in text
    assert "with `workflow_run_id` null" in text
    args = {"context": ctx(), "goal_binding_id": None}
    assert INPUTS["get_router_status"].problems(args)  # the field is required
    totals = await router.call("get_router_status", **args, workflow_run_id=None)
    assert totals["workflow_run_id"] is None


#: Every word of each action family as docs/router.md spells it: one per alternative of
#: the classifier's `_FAMILIES`, so that a word added there fails here until documented.
FAMILY_WORDS = {
    "plan": ["plan", "design", "analyze", "investigate", "scope"],
    "implement": ["implement", "build", "develop", "code", "write code", "add", "refactor",
                  "migrate", "fix"],
    "test": ["test", "verify", "validate", "benchmark"],
    "document": ["document", "write the docs", "update the docs"],
    "release": ["release", "deploy", "ship", "publish"],
    "review": ["review", "audit"],
}  # fmt: skip


def test_the_docs_name_every_word_of_every_action_family():
    """A documentation pass found docs/router.md listing 10 of the families' 27 words."""
    from agora.toolsets.router.classifier import _FAMILIES

    text = " ".join(DOC.read_text().split())
    assert set(FAMILY_WORDS) == set(_FAMILIES)
    for family, pattern in _FAMILIES.items():
        assert len(pattern.split("|")) == len(FAMILY_WORDS[family]), family
        assert f"{family} (" in text, family
        said = text.split(f"{family} (", 1)[1].split(")", 1)[0]
        for word in FAMILY_WORDS[family]:
            assert re.fullmatch(pattern, word), (family, word)
            assert word in said, (family, word, said)


def test_the_classifier_names_only_the_step_labels_it_reads():
    """Its docstring named a "unit" label that `_UNITS` does not hold."""
    from agora.toolsets.router import classifier

    assert classifier.__doc__ is not None
    labels = " ".join(classifier.__doc__.split()).split("labelled steps: ", 1)[1]
    named = re.findall(r"[a-z]+", labels.split(", with a number", 1)[0])
    assert set(named) - {"or"} == set(classifier._UNITS.split("|"))


async def test_the_readme_connects_claude_code_to_the_router_where_it_is_served():
    # "Connecting an agent" named only the chess endpoint; a Claude Code user had to find
    # the router's path, and that HTTP clients are never asked for roots, elsewhere.
    from agora.config import Config
    from agora.server.embed import open_server

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("## Connecting an agent", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"claude mcp add --transport http agora-router (http://\S+)", section)
    assert found is not None
    url = found[1]
    assert url == f"http://127.0.0.1:{Config().port}/mcp/router"
    assert "never asked for MCP roots" in section
    assert "workspace_roots" in section
    path = url.split(str(Config().port), 1)[1]
    config = Config(port=0, db=":memory:")
    async with open_server(config, listen=False) as srv, srv.client(path) as client:
        await client.initialize()
        listed = (await client.request("tools/list", {}))["result"]["tools"]
    assert "plan_work" in {t["name"] for t in listed}


def test_the_readme_sets_up_the_router_in_cursor_with_the_roots_note():
    """Tester finding: the README gave the router's set-up for Claude Code only, and said
    only of Claude Code that an HTTP client is never asked for MCP roots."""
    import json

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    cursor = readme.split("**Cursor** (`~/.cursor/mcp.json`", 1)[1].split("\n**", 1)[0]
    blocks = re.findall(r"```json\n(.*?)```", cursor, re.S)
    servers = {k: v for b in blocks for k, v in json.loads(b)["mcpServers"].items()}
    assert servers["agora-router"] == {"url": "http://127.0.0.1:8765/mcp/router"}
    assert "the roots note above applies" in cursor
    text = " ".join(readme.split())
    assert (
        "An HTTP client (Claude Code, Cursor below, an SDK script) is never asked for MCP roots"
        in text
    )


async def test_the_docs_say_what_to_do_with_a_run_given_up_and_it_holds(router):
    """Tester finding: no tool closes a run and no doc said what to do with one the user
    drops; the convention documented is what the router does."""
    from router_driver import ctx
    from test_router_guidance import PHASED

    text = " ".join(DOC.read_text().split())
    assert "### A run the user gives up" in DOC.read_text()
    said = text.split("### A run the user gives up", 1)[1].split("## ", 1)[0]
    assert "as a new run under its own `context.session_id` (one per task" in said
    run = (await router.plan(PHASED))["workflow_run_id"]
    note = {"status": "abandoned", "note": "the user dropped this task"}
    await router.event(run, "plan", note, 1)  # kept as a note, as the docs say
    status = await router.call("get_router_status", context=ctx(), workflow_run_id=run,
                               goal_binding_id=None)  # fmt: skip
    assert "1 note without a check_id" in status.guidance
    listed = await router.call("get_router_status", context=ctx(), workflow_run_id=None,
                               goal_binding_id=None)  # fmt: skip
    assert f"{run} (status in-progress" in listed.guidance  # still listed, as the docs say


def test_every_text_gives_the_same_session_id_advice_with_a_matching_example():
    """Tester 6 finding: the instructions said "one session_id per task" with the example
    "my-repo", tools/list "the repository's or the task's name", the README "one per project
    or task": a model copying "my-repo" put every task in one session, which the given-up
    run convention (a new session per task) is meant to avoid."""
    from agora.toolsets.router import INSTRUCTIONS
    from agora.toolsets.router.described import PLANNING_CONTEXT

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    router = readme.split("\n### Router", 1)[1].split("\n## ", 1)[0]
    texts = {"instructions": INSTRUCTIONS, "context": PLANNING_CONTEXT["context"],
             "session_id": PLANNING_CONTEXT["context.session_id"], "README": router,
             "docs": DOC.read_text()}  # fmt: skip
    for name, text in texts.items():
        flat = " ".join(text.split())
        assert "my-repo-fix-login" in flat, name
        assert '"session_id": "my-repo"' not in flat, name
        assert "per project" not in flat, name
        assert "repository's or the task's name" not in flat, name
    for name in ("instructions", "session_id", "README", "docs"):
        flat = " ".join(texts[name].split())
        assert "named after the repository and the task" in flat, name


def test_the_readme_says_to_copy_the_gate_arguments_before_defining_the_digest():
    """Tester 9 finding: README's gate paragraph taught computing the digest (with a Python
    one-liner) and only then said that no agent need, where tools/list says never to."""
    readme = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    section = readme[readme.index("Reporting a phase's gate.") :]
    section = section[: section.index("Which versions to send.")]
    copy = "copy `evidence_refs` and `expected_evidence_digest` from the answers"
    assert copy in section
    assert section.index(copy) < section.index("RFC 8785")
    assert "for reference only" in section
    assert "hashlib" not in section


def test_the_readme_adds_the_router_over_stdio_db_to_claude_code():
    """Tester finding: the README wired the router into Claude Code over HTTP only, though
    only ``agora stdio --db`` lets the client's roots authorize a workspace by default, and
    said nothing of one database for all projects, --shared for a second window, or
    absolute paths in [options.router]."""
    import shlex

    from agora.cli_parser import build_parser

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("## Connecting an agent", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"claude mcp add --scope user agora-router -- (.*?)\n```", section, re.S)
    assert found is not None
    argv = shlex.split(found[1].replace("\\\n", " "))
    assert argv[0].endswith("/agora")
    args = build_parser().parse_args(argv[1:])
    assert (args.toolset, args.shared) == ("router", True)
    assert args.db.startswith("/")
    assert args.config.startswith("/")
    text = " ".join(section.split())
    assert "One database for all projects" in text
    assert "unless both run with `--shared`" in text
    assert "Absolute paths in that agora.toml's `[options.router]`" in text
