"""``agora serve`` refuses a configuration it cannot honour before it opens anything.

Each case is a real ``agora serve`` process given one mistake an operator makes (a value out
of range, a principal whose token can never match, a setting spelt wrong in the file or in
the environment, a port in use): it must exit 2 with one line on stderr that names the
setting, where it came from (the file or the ``AGORA_*`` variable), and what is expected, and
it must not have created the database, nor touched one that exists: a server that starts
half-configured fails later, at a worse moment. An embedded server refuses a port in use the
same way, before it opens the database.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import sqlite3
import subprocess
from contextlib import closing
from typing import TYPE_CHECKING

import pytest
import trio
from e2e_process import AGORA, clean_env, serve_refused

from agora.config import Config, load_config
from agora.server.embed import CannotListen, open_server

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 20
HASH = hashlib.sha256(b"a-token").hexdigest()
#: What a port in use is, and what to do about it.
PORT_IN_USE = (
    "Address already in use (another process has that port: stop it, or choose another port"
    " (--port N, port = N in agora.toml, Config(port=N) in a program; 0 picks a free one))"
)


async def refused(tmp_path: Path, toml: str, **env: str) -> str:
    """`serve_refused`, within the time limit."""
    with trio.fail_after(TIMEOUT):
        return await serve_refused(tmp_path, toml, **env)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        pytest.param("port = 99999", "port must be between 0 and 65535, not 99999", id="port-big"),
        pytest.param("port = -1", "port must be between 0 and 65535, not -1", id="port-negative"),
        pytest.param("grace_seconds = -5", "grace_seconds must be 0 or more, not -5", id="grace"),
        pytest.param(
            "commit_timeout = 0", "commit_timeout must be more than 0, not 0", id="commit"
        ),
        pytest.param(
            "max_in_flight = 0", "max_in_flight must be at least 1, not 0", id="in-flight"
        ),
        # Refused by the server, which knows the toolsets it serves (the file may name an
        # embedding program's), before it opens anything, all the same.
        pytest.param(
            "[options.chesss]\nx = 1",
            "[options.chesss] names no toolset; did you mean `chess`? (known: chamber, chess,"
            " router, debate, conformance)",
            id="options-table",
        ),
        pytest.param(
            'toolsets = ["debate"]\n[options.chambr]\nx = 1',
            "[options.chambr] names no toolset; did you mean `chamber`? (known: debate,"
            " chamber, chess, router, conformance)",
            id="options-table-unserved",
        ),
    ],
)
async def test_a_setting_out_of_range_is_refused_naming_the_file(tmp_path, toml, message):
    line = await refused(tmp_path, toml)
    assert line == f"agora: {tmp_path / 'agora.toml'}: {message}"


@pytest.mark.parametrize(
    ("principal", "message"),
    [
        pytest.param(
            'token_sha256 = "a-token"',
            "principal 'p' (principals[0]): token_sha256 must be 64 hex digits, the sha256 of"
            ' the token (printf %s "$TOKEN" | sha256sum), not the token itself',
            id="plain-token",
        ),
        pytest.param(
            'token_sha256 = "…"',
            "principal 'p' (principals[0]): token_sha256 must be 64 hex digits",
            id="placeholder",
        ),
        pytest.param(
            f'token_sha256 = "{HASH}"\nscopes = ["operater"]',
            "principal 'p' (principals[0]): unknown scope 'operater'; known: conductor,"
            " operator, star",
            id="scope",
        ),
        pytest.param(
            f'token_sha256 = "{HASH}"\nname = "anonymous"',
            "principal 'anonymous' (principals[0]): anonymous is the name of callers without"
            " a token",
            id="anonymous",
        ),
    ],
)
async def test_a_principal_that_cannot_work_is_refused(tmp_path, principal, message):
    name = "" if "name =" in principal else 'name = "p"\n'
    line = await refused(tmp_path, f"[[principals]]\n{name}{principal}\n")
    assert line.startswith(f"agora: {tmp_path / 'agora.toml'}: {message}"), line


async def test_two_principals_with_one_token_are_refused(tmp_path):
    toml = "".join(
        f'[[principals]]\nname = "{name}"\ntoken_sha256 = "{HASH}"\n' for name in ("a", "b")
    )
    line = await refused(tmp_path, toml)
    assert line == (
        f"agora: {tmp_path / 'agora.toml'}: principals 'a' and 'b' have the same"
        " token_sha256; each principal needs a token of its own"
    )


async def test_a_misspelt_setting_in_the_file_names_the_file_and_a_near_name(tmp_path):
    line = await refused(tmp_path, "prot = 8765")
    assert line.startswith(f"agora: {tmp_path / 'agora.toml'}: invalid configuration:"), line
    assert "unknown setting `prot`" in line  # (msgspec's "Object contains unknown field")
    assert "did you mean `port`?" in line


async def test_a_single_bracket_principals_table_says_to_write_two(tmp_path):
    """An operator's finding: [principals] for [[principals]] answered only "principals must
    be a list, not a table"."""
    line = await refused(tmp_path, f'[principals]\nname = "a"\ntoken_sha256 = "{HASH}"\n')
    assert line == (
        f"agora: {tmp_path / 'agora.toml'}: principals must be a list, not a table: write each"
        " entry as a [[principals]] table (two brackets)"
    )


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        pytest.param('port = "9000"', "port must be an integer, not a string", id="port"),
        pytest.param("shared = 1", "shared must be true or false, not an integer", id="bool"),
        pytest.param(
            'grace_seconds = "5"', "grace_seconds must be a number, not a string", id="float"
        ),
        pytest.param(
            'anonymous_projects = "local"',
            "anonymous_projects must be a list, not a string",
            id="list-or-unset",
        ),
    ],
)
async def test_a_value_of_another_type_in_the_file_is_refused(tmp_path, toml, message):
    # The file's values were converted as loosely as environment variables' strings:
    # port = "9000" served on 9000, shared = 1 shared the file.
    # AGORA_PORT=0 outranks the file: should the mistake be missed, any free port is served,
    # never 9000 (the file is checked whatever outranks it).
    line = await refused(tmp_path, toml, AGORA_PORT="0")
    assert line == f"agora: {tmp_path / 'agora.toml'}: {message}"


def test_environment_variables_are_still_converted_from_strings(tmp_path, monkeypatch):
    config = tmp_path / "agora.toml"
    config.write_text("grace_seconds = 5\nmax_in_flight = 8\n")  # an integer for a number
    for name, value in {
        "AGORA_PORT": "9000",
        "AGORA_SHARED": "yes",
        "AGORA_PAGE_SIZE": "7",
    }.items():
        monkeypatch.setenv(name, value)
    loaded = load_config(config)
    assert (loaded.port, loaded.shared, loaded.page_size) == (9000, True, 7)
    assert (loaded.grace_seconds, loaded.max_in_flight) == (5.0, 8)


KNOWN_ROUTER = "(known: adapter, client_roots, memory_policy, personal_profile, workspace_roots)"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        pytest.param(
            '[options.router]\nworkspace_root = ["/srv/src"]',
            "[options.router]: unknown key `workspace_root`; did you mean `workspace_roots`?"
            f" {KNOWN_ROUTER}",
            id="router-misspelt",
        ),
        pytest.param(
            '[options.router]\nworkspace_roots = "/srv/src"',
            "[options.router]: workspace_roots must be a list of strings, not a string",
            id="router-type",
        ),
        pytest.param(
            "[options.router.adapter]\ntimeout_second = 5",
            "[options.router.adapter]: unknown key `timeout_second`; did you mean"
            " `timeout_seconds`? (known: authorizations, cases_dir, command, max_memory_mb,"
            " max_output_bytes, timeout_seconds)",
            id="router-adapter",
        ),
        pytest.param(
            '[options.router]\nadapter = "/opt/adapter"',
            "[options.router]: adapter must be a table, not a string",
            id="router-table",
        ),
        pytest.param(
            '[options.chamber]\nroom_pool_size = "big"',
            "[options.chamber]: room_pool_size must be an integer, not a string",
            id="chamber-type",
        ),
        pytest.param(
            "[options.chamber]\nenter_per_minutes = 5",
            "[options.chamber]: unknown key `enter_per_minutes`; did you mean"
            " `enter_per_minute`? (known: anonymous_enter_per_minute,"
            " connection_enter_per_minute, enter_per_minute, room_pool_size, signing_key)",
            id="chamber-misspelt",
        ),
        pytest.param(
            "[options.debate]\nphase_sweep_seconds = true",
            "[options.debate]: phase_sweep_seconds must be a number, not true",
            id="debate-type",
        ),
        pytest.param(
            '[options.chess]\ntable = "default"',
            "[options.chess]: unknown key `table`; it takes no options",
            id="chess",
        ),
        pytest.param(
            "conformance = true\n[options.conformance]\nfixtures = 1",
            "[options.conformance]: unknown key `fixtures`; it takes no options",
            id="conformance",
        ),
    ],
)
async def test_a_toolset_option_it_does_not_read_is_refused(tmp_path, toml, message):
    line = await refused(tmp_path, toml)
    assert line == f"agora: {tmp_path / 'agora.toml'}: {message}"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        pytest.param(
            "[options.chamber]\nenter_per_minute = -5",
            "[options.chamber] enter_per_minute must be at least 0, not -5",
            id="chamber-rate",
        ),
        pytest.param(
            "[options.chamber]\nconnection_enter_per_minute = -1",
            "[options.chamber] connection_enter_per_minute must be at least 0, not -1",
            id="chamber-connection-rate",
        ),
        pytest.param(
            "[options.chamber]\nroom_pool_size = -3",
            "[options.chamber] room_pool_size must be at least 0, not -3",
            id="chamber-pool",
        ),
        pytest.param(
            '[options.chamber]\nsigning_key = "/nonexistent.pem"',
            "[options.chamber] signing_key /nonexistent.pem: cannot read the signing key: No"
            " such file or directory",
            id="chamber-signing-key",
        ),
        pytest.param(
            "[options.debate]\nphase_sweep_seconds = 0",
            "[options.debate] phase_sweep_seconds must be more than 0, not 0",
            id="debate-sweep",
        ),
        pytest.param(
            '[options.router.adapter]\ncommand = ["/bin/true"]\ncases_dir = "/srv/cases"\n'
            "timeout_seconds = -1.5",
            "[options.router.adapter] timeout_seconds must be more than 0, not -1.5",
            id="router-timeout",
        ),
        pytest.param(
            '[options.router.adapter]\ncommand = ["/bin/true"]',
            "[options.router.adapter] cases_dir is required",
            id="router-half-adapter",
        ),
    ],
)
async def test_a_toolset_option_out_of_range_is_refused(tmp_path, toml, message):
    # Each used to pass the start and fail later: every entry (the rates), the pool's refill
    # task (its size), every seal (signature_unavailable, the log silent), the phase-timeout
    # sweep, or every evaluation.
    line = await refused(tmp_path, toml)
    assert line == f"agora: {tmp_path / 'agora.toml'}: {message}"


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        pytest.param("AGORA_PORT", "abc", "port must be an integer, not 'abc'", id="port"),
        pytest.param(
            "AGORA_SHARED", "maybe", "shared must be true or false, not 'maybe'", id="bool"
        ),
    ],
)
async def test_a_bad_environment_variable_is_named(tmp_path, variable, value, said):
    line = await refused(tmp_path, "", **{variable: value})
    assert line == f"agora: {variable}: {said}", line


async def test_a_port_in_use_names_the_address_and_what_to_do(tmp_path):
    with trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = await refused(tmp_path, f"port = {port}")
    assert line == f"agora: cannot listen on 127.0.0.1:{port}: {PORT_IN_USE}"


@pytest.mark.sqlite_only("an SQLite file, its lock and its WAL, byte for byte")
async def test_a_port_in_use_leaves_an_existing_database_as_it_was(tmp_path):
    # A database of an older schema: opening it would migrate it and take its lock.
    db = tmp_path / "agora.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE old (x)")
        conn.commit()
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    with trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with trio.fail_after(TIMEOUT):
            done = await trio.run_process(
                [AGORA, "serve", "--port", str(port), "--db", str(db)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=clean_env(),
            )
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, lines
    assert lines == [f"agora: cannot listen on 127.0.0.1:{port}: {PORT_IN_USE}"]
    # Not migrated, not locked (no .lock), no WAL opened: every file as it was.
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    assert after == before


@contextlib.contextmanager
def immutable(path: Path):
    """``path`` made immutable (``chattr +i``: no process may write it, root included) for
    the block; skips where chattr cannot do it (not root, a file system without it)."""
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("needs: chattr (e2fsprogs)")
    done = subprocess.run([chattr, "+i", str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"needs: chattr +i ({done.stderr.strip()})")
    try:
        yield path
    finally:
        subprocess.run([chattr, "-i", str(path)], check=False)


@pytest.mark.sqlite_only("a read-only SQLite file")
async def test_a_database_it_may_not_write_is_refused_and_left_as_it_was(tmp_path):
    # SQLite opens such a file read-only without a word: the server used to start, then
    # fail every write (a chess table's creation answered "internal error").
    db = tmp_path / "agora.db"
    with trio.fail_after(TIMEOUT):
        async with open_server(Config(db=str(db), toolsets=["chess"]), listen=False):
            pass
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    with immutable(db), trio.fail_after(TIMEOUT):
        done = await trio.run_process(
            [AGORA, "serve", "--port", "0", "--db", str(db), "--toolsets", "chess"],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=clean_env(),
        )
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, lines
    assert lines == [
        f"agora: cannot open database {db}: the database is read-only (its files or file"
        " system refuse writes)"
    ]
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    assert after == before  # no WAL opened, the lock file untouched


async def test_an_embedded_server_on_a_port_in_use_raises_before_opening_the_database(
    tmp_path,
):
    db = tmp_path / "agora.db"
    with trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = Config(port=port, db=str(db), toolsets=["chess"])
        with trio.fail_after(TIMEOUT), pytest.raises(CannotListen) as raised:
            async with open_server(config):
                pytest.fail("served on a port in use")
    assert raised.value.strerror == f"cannot listen on 127.0.0.1:{port}: {PORT_IN_USE}"
    assert list(tmp_path.iterdir()) == []  # neither the database nor its lock file


async def test_a_host_that_does_not_resolve_is_bad_configuration(tmp_path):
    line = await refused(tmp_path, 'host = "no-such-host.invalid"')
    assert line.startswith("agora: cannot listen on no-such-host.invalid:0: "), line
    assert line.endswith("(the host name does not resolve: check --host)"), line


async def test_a_postgresql_server_out_of_reach_is_one_line(tmp_path):
    pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")
    with trio.socket.socket() as closed:  # bound, never listening: connections are refused
        await closed.bind(("127.0.0.1", 0))
        url = f"postgresql://agora@127.0.0.1:{closed.getsockname()[1]}/agora"
        with trio.fail_after(TIMEOUT):
            done = await trio.run_process(
                [AGORA, "serve", "--port", "0", "--db", url],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=clean_env(),
            )
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, lines
    assert len(lines) == 1, lines  # libpq's hint used to follow on a line of its own
    assert lines[0].startswith("agora: cannot open the PostgreSQL database: "), lines
    assert "Connection refused Is the server running on that host" in lines[0]
