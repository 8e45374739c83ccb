"""Mistakes an operator makes on the command line, each said in words they can act on.

Each case runs the real ``agora`` console script: a flag a subcommand does not take is
refused with that subcommand's usage (its flags listed), exit status 2; a setting the server
cannot use is refused in one line naming where it came from (the file or the ``AGORA_*``
variable) and what is expected, before anything is opened; an ``AGORA_*`` variable that
names no setting is said in a warning at start, with the setting it may have meant; a
database path that cannot be opened says why in words (a regular file on the way, a
missing directory, a file that cannot be read, a disk too full for its lock file), not an
errno.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import NoReturn

import pytest
import trio
from e2e_process import AGORA, AgoraProcess, clean_env, run_agora, serve_refused

from agora.cli import main
from disks import fill

TIMEOUT = 20
#: What a public_url must be, as the refusal says it.
PUBLIC_URL = (
    "public_url must be an http:// or https:// URL with a host, such as https://agora.example.com"
)
SYNCHRONOUS = "synchronous must be one of OFF, NORMAL, FULL, EXTRA"


async def refused(tmp_path: Path, toml: str = "", **env: str) -> str:
    """`serve_refused`, within the time limit."""
    with trio.fail_after(TIMEOUT):
        return await serve_refused(tmp_path, toml, **env)


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        pytest.param('public_url = "example.com"', f"{PUBLIC_URL}, not 'example.com'", id="bare"),
        pytest.param('public_url = "ftp://x"', f"{PUBLIC_URL}, not 'ftp://x'", id="ftp"),
        pytest.param('public_url = "http://"', f"{PUBLIC_URL}, not 'http://'", id="no-host"),
        pytest.param('public_url = "http://[::1"', f"{PUBLIC_URL}, not 'http://[::1'", id="ipv6"),
        pytest.param('synchronous = "fast"', f"{SYNCHRONOUS}, not 'fast'", id="synchronous"),
        pytest.param(
            "switch_interval_ms = -1", "switch_interval_ms must be 0 or more, not -1", id="switch"
        ),
        pytest.param(  # (accepted: writes' median went from 1.1 to 31 ms)
            "switch_interval_ms = 100000",
            "switch_interval_ms must be at most 5, not 100000",
            id="switch-long",
        ),
        pytest.param(  # (accepted: a principal's share larger than the whole)
            "max_sessions = 5\nmax_sessions_per_principal = 10",
            "max_sessions_per_principal must be at most max_sessions (5), not 10",
            id="share",
        ),
    ],
)
async def test_a_setting_in_the_file_is_refused_naming_the_file(tmp_path, toml, said):
    line = await refused(tmp_path, toml)
    assert line == f"agora: {tmp_path / 'agora.toml'}: {said}"


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        pytest.param(
            "AGORA_PUBLIC_URL", "example.com", f"{PUBLIC_URL}, not 'example.com'", id="url"
        ),
        pytest.param("AGORA_SYNCHRONOUS", "fast", f"{SYNCHRONOUS}, not 'fast'", id="synchronous"),
        pytest.param(
            "AGORA_SWITCH_INTERVAL_MS",
            "-1",
            "switch_interval_ms must be 0 or more, not -1",
            id="switch",
        ),
        pytest.param(
            "AGORA_MAX_SESSIONS_PER_PRINCIPAL",
            "20000",
            "max_sessions_per_principal must be at most max_sessions (10000), not 20000",
            id="share",
        ),
    ],
)
async def test_a_setting_in_the_environment_is_refused_naming_the_variable(
    tmp_path, variable, value, said
):
    line = await refused(tmp_path, **{variable: value})
    assert line == f"agora: {variable}: {said}"


async def test_an_http_or_https_public_url_is_taken(tmp_path):
    # The refusal above must not catch the URLs it asks for (a path prefix included): the
    # refusal that comes is max_in_flight's, checked after public_url.
    for url in ("http://127.0.0.1:1/", "https://agora.example.com/prefix"):
        line = await refused(tmp_path, f'public_url = "{url}"\nmax_in_flight = 0')
        assert line.endswith("max_in_flight must be at least 1, not 0"), line


async def test_a_misspelt_variable_is_said_at_start_with_the_setting_it_may_mean(tmp_path):
    db = tmp_path / "agora.db"
    # Beside it, variables agora reads that are not settings: none of them is said.
    env = clean_env(AGORA_DB_PAHT="/elsewhere/agora.db", AGORA_TOKEN="t", AGORA_INSTALL_ONLY="1")
    with AgoraProcess("--db", str(db), "--toolsets", "chess", env=env) as server:
        server.assert_clean_exit(server.stop())
    warnings = [line for line in server.lines if " WARNING " in line]
    assert len(warnings) == 1, server.log
    assert (
        warnings[0]
        .rstrip()
        .endswith(
            "WARNING agora.config: AGORA_DB_PAHT is not an agora setting and is ignored;"
            " did you mean AGORA_DB?"
        )
    ), warnings


#: The user a test run as root runs the server as, for a file root could read whatever its
#: mode: ``setpriv`` (util-linux) starts it without root's rights.
NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]


async def _serve_db(db: Path, *, as_nobody: bool = False) -> list[str]:
    """``agora serve --db db`` (``as_nobody``: as nobody, when the test runs as root): its
    stderr lines, after checking it was refused with exit status 2."""
    command = [AGORA, "serve", "--port", "0", "--db", str(db)]
    if as_nobody and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("needs: setpriv (util-linux), to run agora as another user than root")
        command = [setpriv, *NOBODY, *command]
    with trio.fail_after(TIMEOUT):
        done = await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False, env=clean_env()
        )
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, lines
    return lines


@pytest.mark.sqlite_only("SQLite file paths")
async def test_a_database_path_through_a_regular_file_says_so(tmp_path):
    notes = tmp_path / "notes"
    notes.write_text("x")
    lines = await _serve_db(notes / "x.db")
    assert lines == [
        f"agora: cannot open database {notes}/x.db: {notes} is a file, not a directory"
    ]
    assert notes.read_text() == "x"


@pytest.mark.sqlite_only("SQLite file paths")
async def test_a_missing_database_directory_is_named_and_not_made(tmp_path):
    # Made, it would hold a new, empty database: a misspelt directory would seem to have
    # lost the operator's data.
    gone = tmp_path / "agroa"
    lines = await _serve_db(gone / "agora.db")
    assert lines == [
        f"agora: cannot open database {gone}/agora.db: its directory {gone} does not exist"
        f" (create it first: mkdir -p {gone})"
    ]
    assert not gone.exists()


@pytest.mark.sqlite_only("SQLite file paths")
async def test_a_database_file_that_cannot_be_read_is_not_called_read_only():
    # Not in tmp_path, whose parents nobody may search when the test runs as root.
    with tempfile.TemporaryDirectory() as directory:
        os.chmod(directory, 0o755)
        db = Path(directory) / "agora.db"
        db.write_bytes(b"")
        db.chmod(0)
        lines = await _serve_db(db, as_nobody=True)
        assert lines == [
            f"agora: cannot open database {db}: it cannot be read (permission denied to the"
            " user agora runs as)"
        ]


@pytest.mark.sqlite_only("a SQLite file on a full tmpfs")
async def test_a_full_disk_at_start_names_the_lock_file_and_leaves_none(small_disk):
    """An operator's finding: ``agora: [Errno 28] No space left on device``, naming no
    file, with exit status 1 (not the 2 of the other start-up refusals), and an empty
    ``agora.db.lock`` left behind."""
    fill(small_disk)
    db = small_disk / "agora.db"
    lines = await _serve_db(db)
    assert lines == [
        f"agora: cannot lock database {db}: cannot write its lock file {db}.lock:"
        " No space left on device"
    ]
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


@pytest.mark.sqlite_only("a SQLite file on a full tmpfs")
async def test_restarting_a_database_on_a_full_disk_says_the_disk_is_full(small_disk):
    """A tester's finding: a database stopped cleanly, its disk then filled, and the restart
    said only "disk I/O error" (SQLite cannot grow the -shm: SQLITE_IOERR_SHMSIZE), which
    reads as failing hardware."""
    db = small_disk / "agora.db"
    with AgoraProcess("--db", str(db), "--toolsets", "chess") as server:
        assert server.stop() == 0, server.log  # a clean stop: no -wal left
    fill(small_disk)
    lines = await _serve_db(db)
    assert lines[-1].startswith(f"agora: cannot open database {db}: its disk is full ("), lines
    assert "disk I/O error" not in lines[-1].split("SQLite said only:")[0]
    assert lines[-1].endswith(
        f"the file system at {small_disk}, 0 KiB free. Free space there (or move the database"
        " to a disk with room), then start again"
    ), lines


def test_an_os_error_while_starting_names_its_file_and_exits_2(tmp_path, monkeypatch, capsys):
    """Any OSError before the server serves is a refusal like the others: its file named,
    one line, exit status 2 (it was the errno's text alone, exit status 1)."""

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "x"))

    monkeypatch.setattr("agora.server.embed.open_store", refuse)
    # (main's logging set-up would outlive the test: the root logger's level and handler)
    monkeypatch.setattr("agora.cli.configure", lambda *args: None)
    monkeypatch.setattr("agora.cli.set_level", lambda *args: None)
    assert main(["serve", "--port", "0", "--db", str(tmp_path / "a.db")]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"agora: cannot start: Permission denied: {tmp_path / 'x'}"


@pytest.mark.sqlite_only("SQLite file paths")
async def test_relative_paths_are_shown_absolute_in_the_banner_and_refusals(tmp_path):
    """An operator's finding: ``db = "data.db"`` in ``rel/agora.toml`` made ``./data.db``
    in the working directory (not beside the file) and the banner said ``data.db``; the
    refusals named ``rel/agora.toml`` and ``nodir/x.db``. Relative paths stay relative to
    the working directory (README: Configuration), and are shown absolute."""
    (tmp_path / "rel").mkdir()
    (tmp_path / "rel" / "agora.toml").write_text('db = "data.db"\ntoolsets = ["debate"]\n')
    server = AgoraProcess("--config", "rel/agora.toml", preexec_fn=lambda: os.chdir(tmp_path))
    with server:
        assert server.wait_for_line(r"  database: ", TIMEOUT) == f"  database: {tmp_path}/data.db\n"
        server.assert_clean_exit(server.stop())
    assert (tmp_path / "data.db").exists()
    (tmp_path / "rel" / "agora.toml").write_text("port = -1\n")
    with trio.fail_after(TIMEOUT):
        done = await run_agora("serve", "--config", "rel/agora.toml", cwd=tmp_path)
        assert done.stderr.decode().startswith(f"agora: {tmp_path}/rel/agora.toml: port "), done
        done = await run_agora("serve", "--port", "0", "--db", "nodir/x.db", cwd=tmp_path)
    assert done.stderr.decode().startswith(
        f"agora: cannot open database {tmp_path}/nodir/x.db: its directory {tmp_path}/nodir"
    ), done


async def test_a_relative_signing_key_is_refused_naming_the_file_tried(tmp_path):
    """A tester's finding: ``signing_key = "keys/chamber.pem"`` in ``rel/agora.toml``, the key
    put beside the file, was refused as ``signing_key keys/chamber.pem: cannot read the
    signing key``, not saying that ``./keys/chamber.pem`` of the working directory was tried."""
    (tmp_path / "rel" / "keys").mkdir(parents=True)
    (tmp_path / "rel" / "agora.toml").write_text(
        '[options.chamber]\nsigning_key = "keys/chamber.pem"\n'
    )
    with trio.fail_after(TIMEOUT):
        done = await run_agora("serve", "--config", "rel/agora.toml", cwd=tmp_path)
    assert done.returncode == 2, done
    assert done.stderr.decode() == (
        f"agora: {tmp_path}/rel/agora.toml: [options.chamber] signing_key keys/chamber.pem"
        f" ({tmp_path}/keys/chamber.pem, relative to the working directory): cannot read the"
        " signing key: No such file or directory\n"
    ), done
