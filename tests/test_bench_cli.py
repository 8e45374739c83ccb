"""The bench entry points answer an operator's mistake with one line and a non-zero exit.

``python -m bench`` and the bench scripts run here as an operator runs them, as real
processes, with arguments that must be refused before any load starts: a count, a duration, a
rate, a port, a list or a name out of range (in every bench script with a parser of its own,
`BAD_FLAGS`) and a URL that is not ``ws://HOST:PORT/...`` are argparse errors (exit 2),
a server that is not there or that does not know the bench's principal is one line on stderr
(exit 1), never a traceback. Each case is refused in well under a second (the 401 one starts a
real ``agora serve`` for it): none starts a load.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

#: The scripts start their own servers on SQLite files whatever the suite's backend: once is
#: enough (each case is a process of its own, a second or more).
pytestmark = pytest.mark.sqlite_only("the bench scripts' command lines, whatever the backend")

ROOT = Path(__file__).resolve().parents[1]
#: Long enough for a refusal on a busy machine; a bench that starts its load instead (the
#: bug) still ends within it, its load bounded by the ``--seconds 1`` each case adds.
TIMEOUT = 60


def bench(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` in the checkout (``-m bench ...`` or ``bench/X.py ...``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGORA_")}
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def refused(done: subprocess.CompletedProcess[str], status: int, said: str) -> None:
    """The run ended with ``status``, nothing on stdout, and its stderr's last line (the only
    one but argparse's usage) says ``said``, with no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, (done.returncode, done.stderr)
    assert done.stdout == ""
    assert re.search(said, done.stderr.strip().splitlines()[-1]), done.stderr


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        pytest.param(
            ["-m", "bench", "mixed", "--sessions", "0", "--seconds", "1"],
            r"argument --sessions: must be at least 1, not 0",
            id="mixed-no-sessions",
        ),
        pytest.param(
            ["-m", "bench", "mixed", "--sessions", "1", "--seconds", "-1"],
            r"argument --seconds: must be a number above 0, not -1",
            id="mixed-negative-seconds",
        ),
        pytest.param(
            ["-m", "bench", "mixed", "--url", "http://127.0.0.1:1/mcp", "--seconds", "1"],
            r"argument --url: 'http://127.0.0.1:1/mcp' is not a ws:// URL; give ws://HOST:PORT/mcp",
            id="mixed-http-url",
        ),
        pytest.param(
            ["bench/router_runs.py", "--runs", "-5", "--rounds", "1", "--replays", "1"],
            r"argument --runs: must be at least 1, not -5",
            id="router-runs-negative-runs",
        ),
        pytest.param(
            ["bench/ceilings.py", "--kinds", "bogus", "--sessions", "1", "--seconds", "1"],
            r"argument --kinds: unknown kind bogus; the kinds are ping, get_board",
            id="ceilings-unknown-kind",
        ),
        pytest.param(
            ["bench/ceilings.py", "--sessions", "0", "--seconds", "1"],
            r"argument --sessions: must be at least 1, not 0",
            id="ceilings-no-sessions",
        ),
        pytest.param(
            ["bench/chamber_burst.py", "--agents", "0", "--timeout", "5"],
            r"argument --agents: must be at least 1, not 0",
            id="chamber-burst-no-agents",
        ),
        pytest.param(
            ["bench/chamber_burst.py", "--bursts", "-1", "--timeout", "5"],
            r"argument --bursts: must be at least 1, not -1",
            id="chamber-burst-negative-bursts",
        ),
        pytest.param(
            ["bench/parked.py", "--agents", "10", "--chess-share", "2", "--connect-timeout", "5"],
            r"argument --chess-share: must be from 0 to 1, not 2",
            id="parked-share-above-1",
        ),
        pytest.param(
            ["bench/chamber_attempts.py", "--timeout", "0"],
            r"argument --timeout: must be a number above 0, not 0",
            id="chamber-attempts-no-time",
        ),
    ],
)
def test_a_count_or_a_duration_out_of_range_is_a_usage_error(argv: list[str], said: str) -> None:
    done = bench(*argv)
    refused(done, 2, said)
    assert "usage:" in done.stderr


#: After the bad value, an argument no bench takes: a script that took the value (the bug)
#: still stops in argparse, on this one, instead of starting its load.
UNKNOWN = "--refused-before-anything-starts"
COUNT = r"must be at least 1, not "
NUMBER = r"must be a number above 0, not "
ZERO_OR_MORE = r"must be 0 or more, not "
CHOICE = r"invalid choice: 'bogus'"
#: ``--synchronous`` is upper-cased before it is checked, as agora's setting is.
SYNC_CHOICE = r"invalid choice: 'BOGUS' \(choose from 'OFF', 'NORMAL', 'FULL', 'EXTRA'\)"

#: Every standalone bench script (an argparse parser of its own), with a bad value of each
#: kind of flag it takes: a count, a duration or a rate, one where 0 means "none", one with
#: an upper bound, a comma-separated list, a name. A new script is added here (the test
#: below checks that none is missing).
BAD_FLAGS: dict[str, list[tuple[list[str], str]]] = {
    "ceilings": [(["--seconds", "inf"], NUMBER + "inf")],
    "chamber_attempts": [
        (["--agents", "20001"], r"must be from 1 to 20000, not 20001"),
        (["--agents", "99999999999"], r"must be from 1 to 20000, not 99999999999"),
        (["--py-spy-rate", "0"], COUNT + "0"),
        (["--synchronous", "bogus"], SYNC_CHOICE),
    ],
    "chamber_burst": [
        (["--timeout", "nan"], NUMBER + "nan"),
        (["--timeout", "1e300"], r"must be at most 1,000,000,000, not 1e300"),
        (["--bursts", "10000000000"], r"must be at most 1,000,000,000, not 10000000000"),
        (["--servers", "9"], r"must be from 1 to 8, not 9"),
        (["--suite", "bogus"], CHOICE),
    ],
    "chamber_objects": [
        (["--agents", "0"], COUNT + "0"),
        (["--timeout", "nan"], NUMBER + "nan"),
    ],
    "chess_replies": [
        (["--games", "-1"], ZERO_OR_MORE + "-1"),
        (["--plies", "0"], COUNT + "0"),
        (["--note", "161"], r"must be from 0 to 160, not 161"),
    ],
    "chess_tables": [
        (["--tables", "0"], COUNT + "0"),
        (["--seconds", "inf"], NUMBER + "inf"),
        (["--warmup", "-1"], ZERO_OR_MORE + "-1"),
        (["--wakes", "-1"], ZERO_OR_MORE + "-1"),
    ],
    "debate_counts": [(["--topics", "0"], COUNT + "0")],
    "debate_entity": [(["--cycles", "-5"], COUNT + "-5")],
    "debate_load": [
        (["--topics", "0"], COUNT + "0"),
        (["--rate", "-1"], NUMBER + "-1"),
    ],
    "debate_v1": [(["--topics", "0"], COUNT + "0")],
    "debate_writer": [(["--roles", "0"], COUNT + "0"), (["--seconds", "inf"], NUMBER + "inf")],
    "gil_handoff": [(["--batches", "0"], COUNT + "0"), (["--intervals", "5,0"], NUMBER + "0")],
    "http_sessions": [(["--connections", "1001"], r"must be from 1 to 1000, not 1001")],
    "nodes": [
        (["--seconds", "nan"], NUMBER + "nan"),
        (["--clients", "0"], COUNT + "0"),
        (["--nodes", "1,0"], COUNT + "0"),
        (["--wakes", "-1"], ZERO_OR_MORE + "-1"),
        (["--pg-port", "65536"], r"must be from 0 to 65535, not 65536"),
        (["--workloads", "chess,bogus"], r"unknown bogus; give some of chamber,chess,"),
    ],
    "parked": [(["--agents", "-5"], COUNT + "-5")],
    "peer": [
        (["--sessions", "1,-5"], COUNT + "-5"),
        (["--seconds", "inf"], NUMBER + "inf"),
        (["--modes", "bogus"], r"unknown bogus; give some of sse,json,stateless-json"),
        (["--skip", "bogus"], r"unknown bogus; give some of stdio,websocket"),
    ],
    "router_memory": [(["--workspaces", "0"], COUNT + "0")],
    "router_runs": [
        (["--rate", "-1"], ZERO_OR_MORE + "-1"),
        (["--synchronous", "bogus"], SYNC_CHOICE),
    ],
    "runtime_calls": [(["--calls", "0"], COUNT + "0")],
    "sdk_server": [(["bogus"], CHOICE)],
    "shared_file": [(["--tasks", "0"], COUNT + "0"), (["--seconds", "inf"], NUMBER + "inf")],
    "soak": [(["--minutes", "nan"], NUMBER + "nan")],
    "validators": [(["--seconds", "nan"], NUMBER + "nan")],
    "ws_calls": [
        (["--sessions", "0"], COUNT + "0"),
        (["--seconds", "inf"], NUMBER + "inf"),
        (["--idle", "-1"], ZERO_OR_MORE + "-1"),
    ],
}


@pytest.mark.parametrize(
    ("script", "argv", "said"),
    [
        pytest.param(script, argv, said, id=f"{script}{argv[0] if len(argv) > 1 else ''}")
        for script, cases in BAD_FLAGS.items()
        for argv, said in cases
    ],
)
def test_each_bench_script_refuses_a_bad_value_of_each_kind_of_flag(
    script: str, argv: list[str], said: str
) -> None:
    done = bench(f"bench/{script}.py", *argv, UNKNOWN)
    flag = argv[0] if len(argv) > 1 else "mode"
    refused(done, 2, rf"^[\w./]+: error: argument {flag}: {said}")
    assert "usage:" in done.stderr


@pytest.mark.parametrize(
    "script",
    [
        "chamber_attempts",
        "chamber_burst",
        "chess_tables",
        "debate_load",
        "debate_v1",
        "router_runs",
    ],
)
def test_synchronous_is_taken_in_any_case_as_agora_takes_it(script: str) -> None:
    # agora's own `synchronous` setting takes SQLite's words in any case; so does each bench
    # (the bad argument after it is what stops the run).
    done = bench(f"bench/{script}.py", "--synchronous", "full", UNKNOWN)
    refused(done, 2, rf"^[\w./]+: error: unrecognized arguments: {UNKNOWN}")


def test_every_standalone_bench_script_is_in_the_table_of_bad_flags() -> None:
    """``python -m bench`` (`flags.py`) is tested above; every other parser is a script's."""
    scripts = {
        path.stem
        for path in (ROOT / "bench").glob("*.py")
        if "ArgumentParser(" in path.read_text() and path.stem != "flags"
    }
    assert scripts == set(BAD_FLAGS)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        pytest.param(
            ["bench/http_sessions.py", "--posts", "1", "--connections", "2"],
            r"--posts must be at least --connections",
            id="http-sessions-fewer-posts-than-connections",
        ),
        pytest.param(
            ["bench/shared_file.py", "--commands", "3", "--tasks", "4", "--unshared-only"],
            r"--commands must be at least --tasks",
            id="shared-file-fewer-commands-than-tasks",
        ),
        pytest.param(
            ["bench/shared_file.py", "--wakes", "1", "--commands", "16", "--seconds", "1"],
            r"--wakes must be 0 \(none\) or at least 2, for a p99",
            id="shared-file-one-wake",
        ),
        pytest.param(
            [
                "bench/debate_load.py",
                "--only",
                "search",
                "--search-messages",
                "20",
                "--store-messages",
                "10",
                "--topics",
                "1",
                "--queries",
                "1",
                "--pages",
                "1",
            ],
            r"--store-messages must be at least --search-messages",
            id="debate-load-store-smaller-than-search",
        ),
    ],
)
def test_flags_that_contradict_each_other_are_a_usage_error(argv: list[str], said: str) -> None:
    """Checked once every flag is parsed (so with no unknown flag after them: the small sizes
    bound a run that would start instead)."""
    done = bench(*argv)
    refused(done, 2, rf"^[\w./]+: error: {said}$")
    assert "usage:" in done.stderr


def test_a_url_nothing_listens_on_is_one_line_and_exit_1() -> None:
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = bench("-m", "bench", "mixed", "--url", f"ws://127.0.0.1:{port}/mcp", "--seconds", "1")
    refused(done, 1, rf"^python -m bench: cannot connect to ws://127.0.0.1:{port}/mcp: .*refused")
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.fixture
def server_without_bench_principal(tmp_path: Path) -> Iterator[str]:
    """A real ``agora serve`` started without the bench's config: its WebSocket URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGORA_")}
    log = tmp_path / "serve.err"
    serve = ["serve", "--host", "127.0.0.1", "--port", "0", "--toolsets", "router"]
    with log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "agora.cli", *serve, "--db", str(tmp_path / "a.db")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (found := re.search(r"ws://127\.0\.0\.1:\d+/mcp", log.read_text())):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield found.group(0)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TIMEOUT)


def test_a_server_without_the_bench_config_says_to_start_it_with_it(
    server_without_bench_principal: str,
) -> None:
    url = server_without_bench_principal
    done = bench("-m", "bench", "mixed", "--url", url, "--seconds", "1")
    refused(
        done,
        1,
        rf"^python -m bench: {url} refused the bench's token \(HTTP/1.1 401 Unauthorized\): start"
        r" the server with --config on the agora.toml that `python -m bench config DIR` writes$",
    )
    assert len(done.stderr.strip().splitlines()) == 1


def test_config_keeps_an_agora_toml_already_there_unless_forced(tmp_path: Path) -> None:
    toml = tmp_path / "agora.toml"
    toml.write_text('port = 9000\n[[principals]]\nname = "ops"\n')
    done = bench("-m", "bench", "config", str(tmp_path))
    refused(done, 2, rf"config: {toml} exists; give --force to replace it, or another directory")
    assert toml.read_text() == 'port = 9000\n[[principals]]\nname = "ops"\n'
    forced = bench("-m", "bench", "config", str(tmp_path), "--force")
    assert (forced.returncode, forced.stdout) == (0, f"{toml}\n"), forced.stderr
    assert 'name = "mixed"' in toml.read_text()  # the bench's principal
    usage = " ".join(bench("-m", "bench", "--help").stdout.split())
    assert "where to write agora.toml (default: the current directory)" in usage


def test_a_soak_too_short_for_a_trend_is_refused_before_it_starts() -> None:
    """It printed slopes of 0.0 from a single sample after warm-up: a flat server."""
    done = bench("-m", "bench", "soak", "--", "--minutes", "0.25", "--sessions", "10", "--warm",
                 "0.1")  # fmt: skip
    refused(
        done,
        2,
        r"^bench/soak.py: error: --minutes 0.25 leaves too little after --warm 0.1 for a trend,"
        r" which needs 2 samples taken 10 s apart \(--every\): give --minutes at least 0.44$",
    )


def test_a_soak_with_one_sample_after_warm_up_says_so_instead_of_a_slope() -> None:
    """The check above goes by the clock; the run's samples decide (`soak.trends`)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import soak
    finally:
        sys.path.remove(str(ROOT / "bench"))
    point = dict.fromkeys(soak.SERIES, 1.0)
    samples = [point | {"minute": 0.0}, point | {"minute": 0.2}]
    said = soak.trends(samples, 0.1)
    assert isinstance(said, str)
    assert said.startswith("not enough samples after the first 0.1 minute(s) of warm-up")
    grown = soak.trends([*samples, point | {"minute": 0.4, "rss_mib": 2.0}], 0.1)
    assert grown == {f"{key}_slope_per_minute": 0.0 for key in soak.SERIES} | {
        "rss_mib_slope_per_minute": 5.0
    }


def test_the_benches_of_the_readme_table_are_workloads_of_python_m_bench() -> None:
    """The README says ``python -m bench`` runs any of the benches its table names; each is
    run as it is, its own flags after ``--`` (here one its own parser refuses)."""
    for name, flags in (("ceilings", ["--kinds", "bogus"]), ("chamber_burst", ["--bursts", "x"])):
        done = bench("-m", "bench", name, "--", *flags)
        assert done.returncode == 2, done.stderr
        assert f"python -m bench {name}: bench/{name}.py exited 2; no report" in done.stderr


def test_a_text_refusal_is_counted_by_its_kind_not_its_entity() -> None:
    """An operator's finding: the mixed bench's report keyed text refusals by their first 80
    characters, cut mid-word and with the entity's id, so five of one kind were five keys."""
    sys.path.insert(0, str(ROOT / "bench"))  # the bench scripts import each other by name
    try:
        from mixed import refusal_words
    finally:
        sys.path.remove(str(ROOT / "bench"))

    said = [
        f"debate_topic {topic} kept changing elsewhere; nothing was changed: retry the call"
        f" (correlation id corr-{n})"
        for n, topic in enumerate(
            ("bd16a025-1111-4222-8333-444455556666", "0c9e7a11-2222-4333-8444-555566667777")
        )
    ]
    keys = {refusal_words(text) for text in said}
    kind = "debate_topic <id> kept changing elsewhere; nothing was changed: retry the call"
    assert keys == {kind}
    long = refusal_words("word " * 40)
    assert long.endswith("word ...")
    assert len(long) <= 104


def test_a_pid_of_no_process_is_a_usage_error() -> None:
    # A mistyped pid was found only when the sampler read it, mid-run.
    pid = 4_194_000  # above the pids this machine hands out (pid_max is 4,194,304 at most)
    while Path(f"/proc/{pid}").exists():
        pid += 1
    done = bench("-m", "bench", "mixed", "--url", "ws://127.0.0.1:1/mcp", "--pid", str(pid),
                 "--seconds", "1")  # fmt: skip
    refused(done, 2, rf"--pid {pid}: no such process on this machine; give the pid of the --url")


def test_a_run_prints_its_figures_and_what_p99_ratio_is(tmp_path: Path) -> None:
    # The console said only where the report's files were.
    done = bench("-m", "bench", "clients", "--sessions", "8", "--seconds", "1", "--stalled", "4",
                 "--out", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert re.search(r"^- calls_per_s", out, re.MULTILINE), out
    assert re.search(r"^\| alone \| \d+ \|", out, re.MULTILINE), out
    assert re.search(r"^- p99_ratio: [\d.]+$", out, re.MULTILINE), out
    assert "Note: p99_ratio: the other clients' p99 with the rude clients over" in out
    assert re.search(r"^report: .*-clients\.json", out, re.MULTILINE), out
    assert "Note: p99_ratio" in next(tmp_path.glob("*-clients.md")).read_text()
