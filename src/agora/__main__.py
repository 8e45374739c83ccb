"""``python -m agora``: the ``agora`` command (`agora.cli.main`), for a Python without the
console script on its PATH."""

from __future__ import annotations

import sys

from agora.cli import main

if __name__ == "__main__":
    sys.exit(main())
