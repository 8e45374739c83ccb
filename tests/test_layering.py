"""Layering: the sans-io MCP layer (`agora.mcp`) never imports trio, directly or indirectly.

Two checks: every `agora.mcp` module really imported in a fresh interpreter (the package
root `agora/__init__.py` is the embedding API and is skipped by loading `agora` as a bare
namespace), and a static walk over every run-time import statement reachable from
`agora.mcp`, including imports inside functions that the first check would not execute
(type-only imports under ``if TYPE_CHECKING:`` are not run and are skipped).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import agora.mcp

SRC = Path(agora.mcp.__file__).parents[2]
FORBIDDEN = ("trio", "trio_websocket", "agora.runtime", "agora.store", "agora.transports")

PROBE = """
import importlib, json, pkgutil, sys, types
root = types.ModuleType("agora")
root.__path__ = [sys.argv[1] + "/agora"]
sys.modules["agora"] = root
import agora.mcp
names = ["agora.mcp"] + [m.name for m in pkgutil.walk_packages(agora.mcp.__path__, "agora.mcp.")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"imported": names, "modules": sorted(sys.modules)}))
"""


def test_importing_every_mcp_module_loads_no_trio():
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(SRC)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert "agora.mcp.session" in result["imported"]
    loaded = [
        m for m in result["modules"] if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)
    ]
    assert loaded == []


def _module_file(name: str) -> Path | None:
    base = SRC.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _runtime_nodes(node: ast.AST):
    """Every node under ``node`` except the bodies of ``if TYPE_CHECKING:`` blocks."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for other in child.orelse:
                yield other
                yield from _runtime_nodes(other)
            continue
        yield child
        yield from _runtime_nodes(child)


def _imports(path: Path, module: str) -> set[str]:
    """Every module imported at run time by ``path``, at any nesting level."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def test_no_import_statement_reachable_from_mcp_names_trio():
    start = ["agora.mcp"] + [
        f"agora.mcp.{p.stem}" for p in (SRC / "agora" / "mcp").glob("*.py") if p.stem != "__init__"
    ]
    seen: set[str] = set()
    chains: dict[str, str] = {name: name for name in start}
    todo = list(start)
    bad: list[str] = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(name)
        if path is None:
            continue
        for target in _imports(path, name):
            if any(target == f or target.startswith(f + ".") for f in FORBIDDEN):
                bad.append(f"{chains[name]} -> {target}")
            elif target.startswith("agora.") and target not in seen:
                chains.setdefault(target, f"{chains[name]} -> {target}")
                todo.append(target)
    assert len(seen) > len(start)  # it really followed agora.mcp's own imports
    assert bad == []
