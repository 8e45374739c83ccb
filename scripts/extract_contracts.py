"""Extract agora's machine-readable tool contracts from the seed documents.

Reads the chamber, chess and router seeds (``000_*.txt``, ``001_*.txt``, ``002_*.txt`` in the
shared seeds folder) and writes ``src/agora/contracts/<toolset>.json``, one envelope per toolset.
With ``--check`` it writes nothing: it re-extracts and exits 1 if a committed file differs.

This script must not invent contract content: every schema, name and description is copied from a
seed; the only derived fields are the MCP annotations (rules in the contracts README), counts, and
digests. Output is deterministic: seed order is kept, JSON is written with indent=2 and a newline.

Usage: ``scripts/extract_contracts.py [--seeds DIR] [--out DIR] [--check]``
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import rfc8785

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SEEDS = REPO.parent / "shared" / "seeds"
DEFAULT_OUT = REPO / "src" / "agora" / "contracts"
FORMAT = 1
CHESS_SCHEMAS_MODULE = "agora.toolsets.chess.schemas"

# The router seed's own summary line states these; the script refuses to write anything else.
ROUTER_AVAILABILITY_COUNTS = {
    "local-ready": 10,
    "conditional-local": 5,
    "verified-host-required": 2,
    "configured-adapter-required": 3,
}
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
_decoder = json.JSONDecoder()


class SeedError(Exception):
    """A seed does not have the shape this script knows: fix the script, never the seed."""


def _seed(seeds: Path, prefix: str) -> Path:
    found = sorted(seeds.glob(f"{prefix}_*.txt"))
    if len(found) != 1:
        raise SeedError(f"expected exactly one {prefix}_*.txt in {seeds}, found {len(found)}")
    return found[0]


def _envelope(toolset: str, contract_id: str, seed: Path) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "toolset": toolset,
        "contract_id": contract_id,
        "source": seed.name,
        "source_sha256": hashlib.sha256(seed.read_bytes()).hexdigest(),
        "generated_by": "scripts/extract_contracts.py",
    }


def _tool(
    name: str,
    description: str,
    input_schema: dict[str, Any],
    output_schema: dict[str, Any] | None,
    aliases: list[str],
    annotations: dict[str, bool],
    extra: dict[str, Any],
) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name, "description": description, "inputSchema": input_schema}
    if output_schema is not None:
        tool["outputSchema"] = output_schema
    tool.update(aliases=aliases, annotations=annotations, **{"x-agora": extra})
    return tool


# --- chamber -----------------------------------------------------------------------------------

# Read-only: observing does not submit an action (its output does not require action_index).
# Idempotent: "A second seal returns the first card (already_sealed)".
_CHAMBER_ANNOTATIONS = {
    "enter_open_challenge": {"readOnlyHint": False, "idempotentHint": False},
    "observe_chamber": {"readOnlyHint": True},
    "chamber_action": {"readOnlyHint": False, "idempotentHint": False},
    "call_for_help": {"readOnlyHint": False, "idempotentHint": False},
    "seal_attempt": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True},
}


def schema_bundle_hash(document: dict[str, Any]) -> str:
    """Hash the chamber's schema bundle as its ``schema_bundle`` section prescribes.

    The payload is an object holding each of ``payload_fields`` taken from the document, with
    each canonical tool cut down to ``canonical_tools_fields``; it is serialised as RFC 8785
    canonical JSON and hashed with SHA-256.
    """
    bundle = document["schema_bundle"]
    if bundle.get("canonicalization") != "RFC8785":
        raise SeedError(f"unknown canonicalization {bundle.get('canonicalization')!r}")
    payload = {field: document[field] for field in bundle["payload_fields"]}
    keep = bundle["canonical_tools_fields"]
    payload["canonical_tools"] = [
        {key: tool[key] for key in keep if key in tool} for tool in payload["canonical_tools"]
    ]
    return str(bundle["hash_prefix"]) + hashlib.sha256(rfc8785.dumps(payload)).hexdigest()


def extract_chamber(seed: Path) -> dict[str, Any]:
    """Build the chamber contract from its single-JSON-document seed."""
    document = json.loads(seed.read_text(encoding="utf-8"))
    tools, aliases = [], {}
    for entry in document["canonical_tools"]:
        name = entry["name"]
        if set(entry) != {
            "name",
            "purpose",
            "description",
            "aliases",
            "inputSchema",
            "outputSchema",
        }:
            raise SeedError(f"chamber tool {name} has unexpected fields {sorted(entry)}")
        for alias in entry["aliases"]:
            aliases[alias] = name
        tools.append(
            _tool(
                name,
                entry["description"],
                entry["inputSchema"],
                entry["outputSchema"],
                list(entry["aliases"]),
                _CHAMBER_ANNOTATIONS[name],
                {"purpose": entry["purpose"]},
            )
        )
    if len(tools) != 5 or len(aliases) != 3:
        raise SeedError(
            f"chamber: expected 5 tools and 3 aliases, got {len(tools)}, {len(aliases)}"
        )
    contract = _envelope("chamber", document["toolset_id"], seed)
    contract["tools"] = tools
    contract["aliases"] = aliases
    contract["aliases_supported_until"] = document["compatibility"]["aliases_supported_until"]
    contract["schema_bundle_hash"] = schema_bundle_hash(document)
    contract["document"] = {k: v for k, v in document.items() if k != "canonical_tools"}
    return contract


# --- chess -------------------------------------------------------------------------------------

_CHESS_HEADER = re.compile(r"(?P<name>[a-z_]+)(?P<label>Action|Answer)\n(?P<description>[^\n]+)\n")


def _chess_output_schemas() -> dict[str, Any] | None:
    if str(REPO / "src") not in sys.path:
        sys.path.insert(0, str(REPO / "src"))
    try:
        module = importlib.import_module(CHESS_SCHEMAS_MODULE)
    except ModuleNotFoundError as exc:
        # Only "the module is not written yet" is tolerated; a broken import is a real error.
        if exc.name and CHESS_SCHEMAS_MODULE.startswith(exc.name):
            return None
        raise
    return dict(module.OUTPUT_SCHEMAS)


def extract_chess(seed: Path) -> dict[str, Any]:
    """Build the chess contract: input schemas from the seed, outputs from agora's Structs."""
    text = seed.read_text(encoding="utf-8")
    outputs = _chess_output_schemas()
    tools, pos = [], text.index("\n", text.index("gradeNot graded")) + 1
    while pos < len(text.rstrip()):
        head = _CHESS_HEADER.match(text, pos)
        if head is None:
            raise SeedError(f"chess: no tool header at offset {pos}: {text[pos : pos + 40]!r}")
        marker = "View tool JSON\n"
        if not text.startswith(marker, head.end()):
            raise SeedError(f"chess: {head['name']} lacks its tool JSON")
        entry, pos = _decoder.raw_decode(text, head.end() + len(marker))
        if entry["name"] != head["name"] or entry["description"] != head["description"]:
            raise SeedError(f"chess: the tool JSON of {head['name']} disagrees with its heading")
        output = None if outputs is None else outputs[entry["name"]]
        tools.append(
            _tool(
                entry["name"],
                entry["description"],
                entry["inputSchema"],
                output,
                [],
                {"readOnlyHint": entry["kind"] == "answer"},
                {"kind": entry["kind"], "impl": entry["impl"]},
            )
        )
    if len(tools) != 4:
        raise SeedError(f"chess: expected 4 tools, got {len(tools)}")
    if outputs is not None and set(outputs) != {t["name"] for t in tools}:
        raise SeedError(f"{CHESS_SCHEMAS_MODULE}.OUTPUT_SCHEMAS keys differ from the chess tools")
    digest = hashlib.sha256(seed.read_bytes()).hexdigest()
    contract = _envelope("chess", f"human-agent-chess/{digest[:12]}", seed)
    contract["tools"] = tools
    contract["aliases"] = {}
    contract["output_schemas_from"] = None if outputs is None else CHESS_SCHEMAS_MODULE
    return contract


# --- router ------------------------------------------------------------------------------------

_CLASSES = "|".join(ROUTER_AVAILABILITY_COUNTS)
_ROUTER_HEADER = re.compile(rf"(?P<name>[a-z][a-z0-9_]*) — (?P<availability>{_CLASSES})\n")
_ROUTER_META = re.compile(
    r"(?P<description>[^\n]+)\n"
    r"- Risk:\n(?P<risk>R\d) - Runtime requirement:\n"
    r"(?P<runtime>[a-z0-9-]+) - Required capabilities: (?P<capabilities>[^\n]+)\n"
    r"- Local conditions: (?P<conditions>[^\n]+)\n"
    r"- Fallback: (?P<fallback>[^\n]+)\n"
    r"Input schema\n"
)
_ROUTER_TABLE = re.compile(rf"^({_CLASSES}) \|\n(.+) \|$", re.MULTILINE)
# The seed writes full-width punctuation (U+FF0C comma, U+FF1A colon) in its Chinese prose.
_ROUTER_SUMMARY = re.compile(
    r"(\d+) local-ready、(\d+) conditional-local、(\d+) 個 verified-Host-required\uff0c"
    r"以及 (\d+) 個 configured-adapter-required"
)
_MUTATION_FIELDS = ("idempotency_key", "expected_state_version")


def _router_annotations(description: str, input_schema: dict[str, Any]) -> dict[str, bool]:
    # A router mutation carries a CAS version or an idempotency key (DESIGN.md section 6); a tool
    # with neither only reads. A replayed idempotency key has no further effect.
    props = input_schema.get("properties", {})
    mutates = any(field in props for field in _MUTATION_FIELDS)
    annotations = {"readOnlyHint": not mutates}
    if mutates:
        annotations["idempotentHint"] = "idempotency_key" in input_schema.get("required", [])
        if "destructive" in description:
            annotations["destructiveHint"] = True
    return annotations


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",")]


def _router_tool(head: re.Match[str], meta: re.Match[str], ins: Any, outs: Any) -> dict[str, Any]:
    name = head["name"]
    for label, schema in (("input", ins), ("output", outs)):
        if not isinstance(schema, dict) or schema.get("$schema") != DRAFT_07:
            raise SeedError(f"router: {label} schema of {name} is not a draft-07 object schema")
    conditions = meta["conditions"]
    extra = {
        "availability": head["availability"],
        "risk": meta["risk"],
        "runtime_requirement": meta["runtime"],
        "required_capabilities": _csv(meta["capabilities"]),
        "local_conditions": [] if conditions == "not conditional-local" else _csv(conditions),
        "fallback": meta["fallback"],
    }
    annotations = _router_annotations(meta["description"], ins)
    return _tool(name, meta["description"], ins, outs, [], annotations, extra)


def extract_router(seed: Path) -> dict[str, Any]:
    """Build the router contract from the rendered reference page (schemas embedded in prose)."""
    text = seed.read_text(encoding="utf-8")
    anchor = "Section titled “Tool contracts”"
    intro, pos = text[: text.index(anchor)], text.index(anchor) + len(anchor)
    tools: list[dict[str, Any]] = []
    while head := _ROUTER_HEADER.match(text, pos):
        meta = _ROUTER_META.match(text, head.end())
        if meta is None:
            raise SeedError(f"router: {head['name']}: metadata block not recognised")
        ins, pos = _decoder.raw_decode(text, meta.end())
        if not text.startswith("Output schema\n", pos):
            raise SeedError(f"router: {head['name']}: no output schema after the input schema")
        outs, pos = _decoder.raw_decode(text, pos + len("Output schema\n"))
        tools.append(_router_tool(head, meta, ins, outs))
    if not text.startswith("node scripts/", pos):
        raise SeedError(f"router: unparsed text after the last tool: {text[pos : pos + 60]!r}")
    counts = dict.fromkeys(ROUTER_AVAILABILITY_COUNTS, 0)
    for tool in tools:
        counts[tool["x-agora"]["availability"]] += 1
    summary = _ROUTER_SUMMARY.search(intro)
    stated = [int(n) for n in summary.groups()] if summary else None
    if counts != ROUTER_AVAILABILITY_COUNTS or stated != list(counts.values()) or len(tools) != 20:
        raise SeedError(f"router: availability {counts} (seed summary says {stated})")
    names = [tool["name"] for tool in tools]
    if len(set(names)) != len(names):
        raise SeedError("router: duplicate tool names")
    profile = re.search(r"目前產生的 profile\uff1a([a-z0-9-]+)\n", intro)
    if profile is None:
        raise SeedError("router: runtime profile not found")
    classes = dict(_ROUTER_TABLE.findall(intro))
    if list(classes) != list(ROUTER_AVAILABILITY_COUNTS):
        raise SeedError(f"router: availability table has {list(classes)}")
    contract = _envelope("router", f"workflow-skill-router/{profile[1]}", seed)
    contract["tools"] = tools
    contract["aliases"] = {}
    contract["runtime_profile"] = profile[1]
    contract["availability_classes"] = classes
    contract["availability_counts"] = counts
    lines = intro.splitlines()
    contract["notes"] = [lines[1], lines[2], *lines[5:8]]
    return contract


# --- driver ------------------------------------------------------------------------------------

EXTRACTORS = {
    "chamber": ("000", extract_chamber),
    "chess": ("001", extract_chess),
    "router": ("002", extract_router),
}


def render(contract: dict[str, Any]) -> str:
    """Serialise a contract the one way the committed files are written."""
    return json.dumps(contract, indent=2, ensure_ascii=False) + "\n"


def extract_all(seeds: Path) -> dict[str, str]:
    """Extract every contract: file name (``chess.json``) -> file text."""
    return {
        f"{toolset}.json": render(extract(_seed(seeds, prefix)))
        for toolset, (prefix, extract) in EXTRACTORS.items()
    }


def _check(out: Path, files: dict[str, str]) -> int:
    stale = 0
    for name, text in files.items():
        path = out / name
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            stale += 1
            diff = difflib.unified_diff(
                current.splitlines(), text.splitlines(), str(path), "extracted", lineterm="", n=1
            )
            print("\n".join(list(diff)[:40]), file=sys.stderr)
    if stale:
        print(
            f"{stale} contract file(s) out of date: run scripts/extract_contracts.py",
            file=sys.stderr,
        )
        return 1
    print(f"{len(files)} contract files match their seeds")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line: extract (default) or ``--check``; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=Path, default=DEFAULT_SEEDS, help="seed folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="contracts folder")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    try:
        files = extract_all(args.seeds)
    except (SeedError, OSError, KeyError, ValueError) as exc:
        print(f"extract_contracts: {exc!r}", file=sys.stderr)
        return 2
    if args.check:
        return _check(args.out, files)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8")
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
