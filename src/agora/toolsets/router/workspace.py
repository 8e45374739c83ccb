"""Reading Profile files: the workspace file only under an authorized root, never beyond it.

A ``plan_work`` call may name a ``workspace_root``; the router then reads the fixed file
``<root>/.codex/workflow-skill-router.json``, but only when the real path of that root lies
inside a root the operator configured (``[options.router] workspace_roots``) or the MCP
client declared (``roots/list``), and only when the real path of the file still lies
inside that authorized root: ``..`` segments and symlinks are resolved first, so neither
can lead outside. Anything refused or unreadable becomes a profile warning, never an error.
This module does blocking file I/O: call it from a worker thread.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import unquote, urlparse

WORKSPACE_FILE = (".codex", "workflow-skill-router.json")
#: Largest Profile file read, in bytes.
MAX_PROFILE_BYTES = 256 * 1024


def file_roots(uris: list[str]) -> list[str]:
    """The local paths of the ``file://`` URIs among MCP client roots (others are ignored)."""
    out = []
    for uri in uris:
        parsed = urlparse(uri)
        if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            out.append(unquote(parsed.path))
    return out


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _real(path: str) -> Path | None:
    try:
        return Path(os.path.realpath(path, strict=True))
    except (OSError, ValueError):
        return None


def read_text(path: Path) -> tuple[str | None, str | None]:
    """Read a small regular file without following a final symlink.

    Returns:
        ``(text, None)``, or ``(None, problem)`` where problem is ``absent``, ``unreadable``
        or ``too-large``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, "absent"
    except OSError:
        return None, "unreadable"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, "unreadable"
        if info.st_size > MAX_PROFILE_BYTES:
            return None, "too-large"
        data = handle.read(MAX_PROFILE_BYTES + 1)
    if len(data) > MAX_PROFILE_BYTES:
        return None, "too-large"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "unreadable"


def authorized_root(
    workspace_root: str, authorized: list[str]
) -> tuple[Path | None, Path | None, str | None]:
    """Resolve ``workspace_root`` and the authorized root it lies under.

    Returns:
        ``(real_root, trusted_root, None)``, or ``(None, None, warning)`` when it is not
        absolute, does not exist, or lies under no authorized root.
    """
    if not os.path.isabs(workspace_root):
        return None, None, "workspace-root-not-absolute"
    real_root = _real(workspace_root)
    if real_root is None:
        return None, None, "workspace-root-missing"
    allowed = [r for r in (_real(a) for a in authorized if os.path.isabs(a)) if r is not None]
    trusted = next((r for r in allowed if _inside(real_root, r)), None)
    if trusted is None:
        return None, None, "workspace-root-not-authorized"
    return real_root, trusted, None


def file_in_root(real_root: Path, trusted: Path, parts: tuple[str, ...], label: str
                 ) -> tuple[str | None, list[str]]:  # fmt: skip
    """A fixed file under an authorized root, if its real path stays inside the root.

    Returns:
        ``(text, warnings)``; text is None when there is no such file or it was refused.
    """
    candidate = real_root.joinpath(*parts)
    if not os.path.lexists(candidate):
        return None, []
    real_file = _real(str(candidate))
    if real_file is None or not _inside(real_file, trusted):
        return None, [f"{label}-escapes-root"]
    text, problem = read_text(real_file)
    if text is None:
        return None, [] if problem == "absent" else [f"{label}-{problem}"]
    return text, []


def workspace_profile(workspace_root: str, authorized: list[str]) -> tuple[str | None, list[str]]:
    """The workspace Profile text, if the root is authorized and the file stays inside it.

    Args:
        workspace_root: The caller's workspace root (untrusted).
        authorized: Operator-configured and client-declared roots.

    Returns:
        ``(text, warnings)``; text is None when nothing was read.
    """
    real_root, trusted, warning = authorized_root(workspace_root, authorized)
    if real_root is None or trusted is None:
        return None, [warning or "workspace-root-not-authorized"]
    return file_in_root(real_root, trusted, WORKSPACE_FILE, "workspace-profile")


def identity_of(workspace_root: str, authorized: list[str]) -> str:
    """The path-free identity of an authorized workspace root (``unverified`` if it is not)."""
    from agora.toolsets.router.digests import digest

    real_root, _trusted, _warning = authorized_root(workspace_root, authorized)
    return digest({"workspace": str(real_root)}) if real_root is not None else "unverified"


def personal_profile(path: str | None) -> tuple[str | None, list[str]]:
    """The operator-configured personal Profile's text (a trusted path), if any."""
    if not path:
        return None, []
    text, problem = read_text(Path(path))
    if text is None:
        return None, [f"personal-profile-{problem}"]
    return text, []
