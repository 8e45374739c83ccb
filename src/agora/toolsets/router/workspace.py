"""Reading Profile files: the workspace file only under an authorized root, never beyond it.

A ``plan_work`` call may name a ``workspace_root``; the router then reads the fixed file
``<root>/.codex/workflow-skill-router.json``, but only when that root lies inside a root the
operator configured (``[options.router] workspace_roots``) or the MCP client declared
(``roots/list``): first lexically (a path outside every authorized root is refused without
looking at the disk, so the warning never tells whether it exists), then by its real path,
and only when the real path of the file still lies inside that authorized root: ``..``
segments and symlinks are resolved, so neither can lead outside. Anything refused or
unreadable becomes a profile warning, never an error.
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


def _lexical(path: str) -> Path:
    """``path`` with ``.``, ``..`` and repeated separators folded, without touching the disk."""
    return Path(os.path.normpath(path))


def authorized_root(
    workspace_root: str, authorized: list[str]
) -> tuple[Path | None, Path | None, str | None]:
    """Resolve ``workspace_root`` and the authorized root it lies under.

    A path outside every authorized root is refused lexically, before anything on the disk
    is looked at, so the answer (``workspace-root-not-authorized``) is the same whether such
    a path exists or not: the warning is no oracle for the caller. Only a path lexically
    under an authorized root (as configured or declared, or as it resolves) is then
    resolved, and its real path must still lie under the real path of an authorized root,
    which refuses a symlink or ``..`` through one that leads out (whether or not what it
    leads to exists: only a path that stays inside may be called missing).

    Returns:
        ``(real_root, trusted_root, None)``, or ``(None, None, warning)`` when it is not
        absolute, lies under no authorized root, or (under one) does not exist.
    """
    if not os.path.isabs(workspace_root):
        return None, None, "workspace-root-not-absolute"
    roots = [a for a in authorized if os.path.isabs(a)]
    if not roots:
        return None, None, "workspace-root-not-authorized"
    lexical = _lexical(workspace_root)
    allowed = [r for r in (_real(a) for a in roots) if r is not None]
    if not any(_inside(lexical, r) for r in (*(_lexical(a) for a in roots), *allowed)):
        return None, None, "workspace-root-not-authorized"
    try:  # as far as it exists: a link that leads out is refused whether its target exists
        resolved = Path(os.path.realpath(workspace_root))
    except (OSError, ValueError):
        return None, None, "workspace-root-not-authorized"
    trusted = next((r for r in allowed if _inside(resolved, r)), None)
    if trusted is None:
        return None, None, "workspace-root-not-authorized"
    real_root = _real(str(resolved))
    if real_root is None:
        return None, None, "workspace-root-missing"
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


def enclosing_profile(workspace_root: str, authorized: list[str]) -> str | None:
    """The nearest directory above an authorized ``workspace_root`` that holds a workspace
    Profile file, looking no higher than the authorized root it lies under (None if none
    does): a subdirectory sent as the root is then named with the root meant."""
    real_root, trusted, _warning = authorized_root(workspace_root, authorized)
    if real_root is None or trusted is None:
        return None
    for parent in real_root.parents:
        if not _inside(parent, trusted):
            return None
        if os.path.lexists(parent.joinpath(*WORKSPACE_FILE)):
            return str(parent)
    return None


def identity_of(workspace_root: str, authorized: list[str]) -> str:
    """The path-free identity of an authorized workspace root (``unverified`` if it is not)."""
    from agora.toolsets.router.digests import digest

    real_root, _trusted, _warning = authorized_root(workspace_root, authorized)
    return digest({"workspace": str(real_root)}) if real_root is not None else "unverified"


#: What each problem of `read_text` says of the file.
_WRONG = {
    "absent": "not there",
    "unreadable": "not a readable regular UTF-8 file",
    "too-large": f"larger than {MAX_PROFILE_BYTES // 1024} KiB",
}


def tried(path: str) -> str:
    """A configured path as the server reads it: absolute, and, when it was configured
    relative, that form too (it resolves against the server's working directory, which for
    a host that starts ``agora stdio`` is each project's)."""
    full = os.path.abspath(path)
    if full == os.path.normpath(path):
        return full
    return f"{full} (configured as {path}, relative to the server's working directory)"


def personal_profile(path: str | None) -> tuple[str | None, list[str]]:
    """The operator-configured personal Profile's text (a trusted path), if any; else a
    warning naming the absolute path tried and what is wrong with it."""
    if not path:
        return None, []
    text, problem = read_text(Path(path))
    if text is None:
        return None, [f"personal-profile-{problem}: {tried(path)} is {_WRONG[str(problem)]}"]
    return text, []
