"""The configured evaluation adapter: a trusted command run on sealed cases, confined.

Only the operator names what runs and what it reads, in ``[options.router.adapter]``:
``command`` (an argv list), ``cases_dir`` (the directory of sealed cases),
``authorizations`` (the ``authorization_ref`` values that may start an evaluation), and
limits (``timeout_seconds``, ``max_memory_mb``, ``max_output_bytes``). From the model only
names arrive: a ``sealed_case_ref`` must be an identifier, is matched against the entries
of ``cases_dir`` as listed, and the case (``<ref>/case.json`` and the files it lists) is
read only where its real path stays inside that case's directory, so ``..``, absolute
paths and symlinks cannot lead out. The adapter gets the case's content on stdin, never a
path, and runs in an empty temporary directory with a minimal environment, CPU, memory,
file-size and open-file limits, and a wall-clock timeout after which it is killed.
Protocol: stdin ``{"protocol", "attempt", "case"}``; stdout one JSON object
``{"items": [{"item_id", "passed", "hard_violations"}]}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import trio

from agora.toolsets.options import OptionsError, bounded
from agora.toolsets.router.digests import digest
from agora.toolsets.router.workspace import read_text

PROTOCOL: Final = "agora-router-adapter/1"
CASE_FORMAT: Final = "agora-router-sealed-case/1"
_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_FILE: Final = re.compile(r"^[A-Za-z0-9._/-]{1,200}$")
#: How range refusals name the adapter's table.
_TABLE: Final = "router.adapter"


#: ``[options.router.adapter]``: the keys `AdapterConfig.from_options` reads.
ADAPTER_OPTIONS: Final = {
    "command": list[str],
    "cases_dir": str,
    "authorizations": list[str],
    "timeout_seconds": float,
    "max_memory_mb": int,
    "max_output_bytes": int,
}


class CaseError(ValueError):
    """A sealed case that cannot be used: unknown, malformed, or reaching outside its directory."""


@dataclass(frozen=True, slots=True)
class AdapterConfig:
    """The operator's adapter settings."""

    command: tuple[str, ...]
    cases_dir: Path
    authorizations: frozenset[str]
    timeout_seconds: float = 30.0
    max_memory_mb: int = 512
    max_output_bytes: int = 1 << 20

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> AdapterConfig | None:
        """The adapter of ``[options.router]``, or None when none is configured; read at
        start too (the router's `Toolset.options_check`), so that limits no run could keep
        (a negative timeout, no memory) stop the server rather than fail every evaluation.

        Raises:
            OptionsError: a limit is out of range, or the table lacks ``command`` or
                ``cases_dir`` (an adapter half configured would silently be none).
        """
        raw = options.get("adapter")
        if not isinstance(raw, Mapping):
            return None
        for key in ("command", "cases_dir"):
            if not raw.get(key):
                raise OptionsError(f"[options.router.adapter] {key} is required")
        return cls(
            tuple(str(a) for a in raw["command"]),
            Path(str(raw["cases_dir"])),
            frozenset(str(a) for a in raw.get("authorizations", ())),
            float(bounded(_TABLE, raw, "timeout_seconds", 30.0, 0.0, above=True)),
            int(bounded(_TABLE, raw, "max_memory_mb", 512, 1)),
            int(bounded(_TABLE, raw, "max_output_bytes", 1 << 20, 1)),
        )

    def identity(self) -> str:
        """The digest of what runs, bound into every manifest."""
        return digest({"command": list(self.command), "protocol": PROTOCOL})


def check_options(options: Mapping[str, Any]) -> None:
    """The router's `Toolset.options_check`: the adapter's table read at start as an
    evaluation reads it (`AdapterConfig.from_options`).

    Raises:
        OptionsError: an adapter limit out of range, or ``command``/``cases_dir`` missing.
    """
    AdapterConfig.from_options(options)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def load_case(config: AdapterConfig, ref: str) -> dict[str, Any]:
    """Read sealed case ``ref`` with its files, confined to its own directory (blocking I/O).

    Raises:
        CaseError: the ref is not a listed case, or the case is malformed or escapes.
    """
    if not _NAME.match(ref):
        raise CaseError("sealed-case-ref-invalid")
    root = Path(os.path.realpath(config.cases_dir))
    try:
        listed = {entry.name: entry for entry in os.scandir(root)}
    except OSError:
        raise CaseError("sealed-case-directory-unavailable") from None
    if ref not in listed:
        raise CaseError("sealed-case-unknown")
    case_dir = Path(os.path.realpath(listed[ref].path))
    if not _inside(case_dir, root) or case_dir == root or not case_dir.is_dir():
        raise CaseError("sealed-case-escapes-directory")
    doc = _confined_json(case_dir, "case.json")
    if not isinstance(doc, dict) or doc.get("format") != CASE_FORMAT:
        raise CaseError("sealed-case-malformed")
    files: dict[str, str] = {}
    for name in doc.get("files", []):
        if not isinstance(name, str) or not _FILE.match(name) or name.startswith("/"):
            raise CaseError("sealed-case-escapes-directory")
        files[name] = _confined_text(case_dir, name)
    return {**doc, "files": files}


def _confined_text(case_dir: Path, name: str) -> str:
    real = Path(os.path.realpath(case_dir / name))
    if not _inside(real, case_dir):
        raise CaseError("sealed-case-escapes-directory")
    text, problem = read_text(real)
    if text is None:
        raise CaseError(f"sealed-case-file-{problem}")
    return text


def _confined_json(case_dir: Path, name: str) -> Any:
    try:
        return json.loads(_confined_text(case_dir, name))
    except ValueError:
        raise CaseError("sealed-case-malformed") from None


def _limits(config: AdapterConfig) -> None:  # runs in the child between fork and exec
    memory = config.max_memory_mb * 1024 * 1024
    cpu = max(1, int(config.timeout_seconds) + 1)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    os.setsid()


async def _kill_group(process: trio.Process) -> None:
    # The child leads its own session (setsid): kill everything it started, at once.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


async def run_attempt(config: AdapterConfig, case: dict[str, Any], attempt: int) -> dict[str, Any]:
    """Run one fresh attempt; never raises for what the adapter does.

    Returns:
        ``{"attempt", "status": "completed"|"failed"|"timed-out", "items": [...]}``; items
        only from a completed attempt whose output parsed, never invented.
    """
    request = json.dumps({"protocol": PROTOCOL, "attempt": attempt, "case": case}).encode()
    with tempfile.TemporaryDirectory(prefix="agora-adapter-") as scratch:
        try:
            with trio.move_on_after(config.timeout_seconds) as scope:
                done = await trio.run_process(
                    list(config.command), stdin=request, capture_stdout=True,
                    capture_stderr=True, check=False, cwd=scratch,
                    env={"PATH": os.defpath, "LC_ALL": "C.UTF-8"},
                    preexec_fn=lambda: _limits(config), deliver_cancel=_kill_group,
                )  # fmt: skip
        except OSError:
            return {"attempt": attempt, "status": "failed", "reason": "adapter-not-startable"}
    if scope.cancelled_caught:
        return {"attempt": attempt, "status": "timed-out", "reason": "timeout"}
    if done.returncode != 0 or len(done.stdout) > config.max_output_bytes:
        return {"attempt": attempt, "status": "failed", "reason": "adapter-failed"}
    items = _items(done.stdout)
    if items is None:
        return {"attempt": attempt, "status": "failed", "reason": "adapter-output-invalid"}
    return {"attempt": attempt, "status": "completed", "items": items}


def _items(stdout: bytes) -> list[dict[str, Any]] | None:
    try:
        out = json.loads(stdout)
    except ValueError:
        return None
    items = out.get("items") if isinstance(out, dict) else None
    if not isinstance(items, list):
        return None
    clean = []
    for item in items:
        if not (isinstance(item, dict) and isinstance(item.get("item_id"), str)
                and isinstance(item.get("passed"), bool)
                and type(item.get("hard_violations")) is int):  # fmt: skip
            return None
        clean.append({k: item[k] for k in ("item_id", "passed", "hard_violations")})
    return clean
