"""A small tmpfs to fill to the last byte: the full-disk tests of the store and of the server.

Mounting needs root; elsewhere the fixture built on `small_tmpfs` (``small_disk`` in the
suite's conftest) skips with one "needs:" line (and fails under CI=true). Not a test module.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@contextlib.contextmanager
def small_tmpfs(tmp_path: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``tmp_path/disk``, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs: root, to mount a small tmpfs")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"needs: a tmpfs mount ({done.stderr.strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> None:
    """Write ``directory/filler`` until the file system is full."""
    chunk = b"\0" * 65536
    with (directory / "filler").open("wb", buffering=0) as out:
        while True:
            try:
                out.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
        with contextlib.suppress(OSError):  # the last few bytes, if a page is half used
            while out.write(b"\0"):
                pass
