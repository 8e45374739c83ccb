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


# Layers, lowest first. A module may import (at run time or under TYPE_CHECKING, which
# counts too: a type-only cycle is still a cycle in the design) only from its own layer and
# the layers listed for it. `agora.server.embed` (and its `agora.server.stdio_host`), `agora.cli`
# and the package root are the composition root: they wire transports to the server and may
# import anything.
LAYERS: dict[str, tuple[str, ...]] = {
    "leaf": (),
    "store": ("leaf",),
    "runtime": ("leaf", "store"),
    "mcp": ("leaf",),
    "web": ("leaf", "store", "runtime"),
    "toolsets": ("leaf", "store", "runtime", "mcp", "web"),
    "config": ("leaf",),
    "server": ("leaf", "store", "runtime", "mcp", "web", "toolsets", "config"),
    "transports": ("leaf", "store", "runtime", "mcp", "web", "toolsets", "config", "server"),
}
COMPOSITION_ROOT = (
    "agora",
    "agora.cli",
    "agora.server.embed",
    "agora.server.stdio_host",
    "agora.client",
    "agora.__main__",
)


def _layer(module: str) -> str | None:
    if module in COMPOSITION_ROOT:
        return None
    if module in ("agora.errors", "agora.identity", "agora.logsafe"):
        return "leaf"
    if module in ("agora.config", "agora.config_checks", "agora.config_env", "agora.config_ranges"):
        return "config"
    part = module.split(".")[1] if module.count(".") else ""
    if part == "server":
        return "server"
    return part if part in LAYERS else None


def _all_imports(path: Path, module: str) -> set[str]:
    """Like `_imports`, but type-only imports count too."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                found.add(f"{base}.{node.module}" if node.module else base)
            else:
                found.add(node.module or "")
    return found


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer_violations() -> list[str]:
    bad: list[str] = []
    for path in sorted((SRC / "agora").rglob("*.py")):
        module = _module_name(path)
        layer = _layer(module)
        if layer is None:
            continue
        allowed = {layer, *LAYERS[layer]}
        for target in sorted(_all_imports(path, module)):
            if not target.startswith("agora."):
                continue
            target_layer = _layer(target)
            if target_layer is None or target_layer not in allowed:
                bad.append(f"{module} ({layer}) imports {target} ({target_layer or 'root'})")
    return bad


def test_every_layer_imports_only_the_layers_below_it():
    # transports -> server -> mcp / runtime -> store, with toolsets between the server and
    # the runtime, and `agora.errors` / `agora.identity` as leaves everyone may use.
    assert _layer("agora.store.db") == "store"
    assert _layer("agora.server.embed") is None
    assert _layer_violations() == []


def test_store_and_runtime_import_nothing_from_toolsets_even_for_types():
    # The cycle this used to be: runtime -> store -> toolsets.base -> runtime.
    offenders = [
        f"{_module_name(p)} -> {t}"
        for folder in ("store", "runtime")
        for p in (SRC / "agora" / folder).rglob("*.py")
        for t in _all_imports(p, _module_name(p))
        if t.startswith(("agora.toolsets", "agora.server", "agora.transports", "agora.web"))
    ]
    assert offenders == []


def test_old_names_still_import_from_toolsets_base():
    from agora.identity import Principal
    from agora.store.migrations import Migration
    from agora.toolsets import base
    from agora.web.http import Route

    assert (base.Principal, base.Migration, base.Route) == (Principal, Migration, Route)


def test_readme_docs_and_sources_never_point_outside_the_repository():
    repo = SRC.parent
    files = [repo / "README.md", *(repo / "docs").rglob("*.md"), *(SRC / "agora").rglob("*")]
    found = [
        f"{path.relative_to(repo)}: {needle}"
        for path in files
        if path.is_file() and path.suffix in (".md", ".py", ".json", ".html", ".js", ".css")
        for needle in ("../shared", "shared/seeds", "DESIGN.md", "SCALE-OUT.md", "STYLE.md")
        if needle in path.read_text(encoding="utf-8")
    ]
    assert found == []
