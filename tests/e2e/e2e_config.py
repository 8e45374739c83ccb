"""The TOML settings end-to-end servers start with: principals, their tokens and scopes.

Only writes text and files: this module must not start servers or know any toolset.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

#: The bearer token of the "ops" principal in every test config.
TOKEN = "e2e-operator-token"


def principal_toml(
    name: str, token: str, *, scopes: str | None = None, projects: str | None = None
) -> str:
    """A ``[[principals]]`` table for ``name`` holding ``token``; ``scopes`` and ``projects``
    (TOML arrays) only when given."""
    digest = hashlib.sha256(token.encode()).hexdigest()
    table = f'[[principals]]\nname = "{name}"\ntoken_sha256 = "{digest}"\n'
    if scopes is not None:
        table += f"scopes = {scopes}\n"
    if projects is not None:
        table += f"projects = {projects}\n"
    return table


def roster_toml(agents: Mapping[str, tuple[str, str]], *, projects: str) -> str:
    """``[[principals]]`` tables for ``{name: (token, scopes)}``, each granted ``projects``."""
    return "\n".join(
        principal_toml(name, token, scopes=scopes, projects=projects)
        for name, (token, scopes) in agents.items()
    )


def write_config(directory: Path, extra: str = "") -> Path:
    """An agora.toml with one operator principal (``TOKEN``) and ``extra`` settings."""
    path = directory / "agora.toml"
    path.write_text(f"{extra}\n" + principal_toml("ops", TOKEN, scopes='["operator"]'))
    return path
