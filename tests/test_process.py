"""``rss_bytes`` for ``/healthz``: the resident memory of the server's process, from /proc."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agora.server.process import resident_bytes


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="no /proc")
def test_resident_bytes_is_what_the_kernel_says_the_process_holds():
    status = Path("/proc/self/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert found is not None
    rss = resident_bytes()
    assert rss is not None
    # The same pages, counted in two files (VmRSS in KiB): equal but for what moved between.
    assert abs(rss - int(found.group(1)) * 1024) < 64 << 20, (rss, found.group(1))
    assert rss > 1 << 20  # an interpreter with pytest loaded holds more than a MiB
