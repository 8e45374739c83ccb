"""The chamber contract as data: codes, limits, suites, notice, aliases and the schema bundle.

Everything the chamber enforces that the contract states (`scoreia-chamber-tools/0.3.0`) is
read from the contract document here, so the code never restates error codes, limits, suite
ids or the publication notice. The document comes from `agora.mcp.contracts.load_contract`
(its ``document`` key holds the seed document verbatim). This module must not import trio,
touch the store, or hold any state beyond the parsed, immutable contract.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import rfc8785


@dataclass(frozen=True, slots=True)
class Suite:
    """One puzzle suite as the contract lists it."""

    id: str
    generation: str
    engine: str
    status: str
    default: bool


@dataclass(frozen=True, slots=True)
class Limits:
    """The contract's numeric limits."""

    max_actions: int
    attempt_ttl_seconds: int
    max_request_bytes: int
    max_array_items: int
    max_json_depth: int
    finished_session_retention_seconds: int


@dataclass(frozen=True)
class ChamberContract:
    """The parsed chamber contract.

    Attributes:
        document: The contract document, exactly as published.
    """

    document: Mapping[str, Any]

    @property
    def toolset_id(self) -> str:
        """The toolset id new cards bind (``scoreia-chamber-tools/0.3.0``)."""
        return str(self.document["toolset_id"])

    @property
    def legacy_toolset_id(self) -> str:
        """The superseded toolset id whose cards are never rewritten."""
        return str(self.document["compatibility"]["legacy_toolset"])

    @functools.cached_property
    def error_codes(self) -> frozenset[str]:
        """Every error code the contract allows."""
        return frozenset(self.document["error_codes"])

    @functools.cached_property
    def attempt_states(self) -> tuple[str, ...]:
        """The attempt states, in contract order."""
        return tuple(self.document["attempt_states"])

    @functools.cached_property
    def limits(self) -> Limits:
        """Numeric limits (actions, TTL, request size, retention)."""
        raw = self.document["limits"]
        return Limits(**{f.name: int(raw[f.name]) for f in fields(Limits)})

    @functools.cached_property
    def suites(self) -> tuple[Suite, ...]:
        """The suites, in contract order."""
        return tuple(
            Suite(s["id"], s["generation"], s["engine"], s["status"], bool(s["default"]))
            for s in self.document["suites"]
        )

    def suite(self, suite_id: str | None) -> Suite | None:
        """The active suite ``suite_id`` (the default suite for None), or None if unknown."""
        for s in self.suites:
            if (s.id == suite_id if suite_id is not None else s.default) and s.status == "active":
                return s
        return None

    @functools.cached_property
    def action_ops(self) -> tuple[str, ...]:
        """Every op `chamber_action` accepts, in contract order."""
        return tuple(self.document["action_ops"])

    @functools.cached_property
    def origins(self) -> tuple[str, ...]:
        """Declarable origins."""
        return tuple(self.document["origins"])

    @property
    def identity(self) -> Mapping[str, Any]:
        """The identity section (fields, assurances, publication notice)."""
        return self.document["identity"]  # type: ignore[no-any-return]

    @property
    def community_assurance(self) -> str:
        """Assurance of participant-declared identity claims."""
        return str(self.identity["community_assurance"])

    @property
    def summoned_assurance(self) -> str:
        """Assurance of an operator-summoned attempt."""
        return str(self.identity["summoned_assurance"])

    @functools.cached_property
    def publication_notice(self) -> Mapping[str, str] | None:
        """The publication notice (en, fr, privacy, terms), or None if the contract lacks it."""
        notice = self.identity.get("publication_notice")
        if not isinstance(notice, Mapping) or not notice.get("en") or not notice.get("fr"):
            return None
        return {str(k): str(v) for k, v in notice.items()}

    @functools.cached_property
    def aliases(self) -> Mapping[str, str]:
        """Alias tool name -> canonical tool name."""
        return {
            alias: tool["name"]
            for tool in self.document["canonical_tools"]
            for alias in tool.get("aliases", ())
        }

    @functools.cached_property
    def tool_names(self) -> tuple[str, ...]:
        """Canonical tool names, in contract order."""
        return tuple(tool["name"] for tool in self.document["canonical_tools"])

    def output_schema(self, tool: str) -> Mapping[str, Any]:
        """The outputSchema of canonical tool ``tool`` (or of the tool an alias names)."""
        name = self.aliases.get(tool, tool)
        for entry in self.document["canonical_tools"]:
            if entry["name"] == name:
                return entry["outputSchema"]  # type: ignore[no-any-return]
        raise KeyError(tool)

    @functools.cached_property
    def aliases_supported_until(self) -> dt.date:
        """Last UTC day on which aliases are still answered."""
        return dt.date.fromisoformat(self.document["compatibility"]["aliases_supported_until"])

    def alias_expired(self, wall: dt.datetime) -> bool:
        """Whether aliases are past their cutoff at ``wall`` (the cutoff day is still served)."""
        return wall.astimezone(dt.UTC).date() > self.aliases_supported_until

    @functools.cached_property
    def schema_bundle_hash(self) -> str:
        """``sha256:`` + hex of the RFC 8785 bundle of the contract's schema payload fields."""
        bundle = self.document["schema_bundle"]
        if bundle.get("canonicalization") != "RFC8785":
            raise ValueError(f"unsupported canonicalization {bundle.get('canonicalization')!r}")
        keep = bundle["canonical_tools_fields"]
        payload: dict[str, Any] = {}
        for name in bundle["payload_fields"]:
            value = self.document[name]
            if name == "canonical_tools":
                value = [{k: tool[k] for k in keep if k in tool} for tool in value]
            payload[name] = value
        digest = hashlib.sha256(rfc8785.dumps(payload)).hexdigest()
        return f"{bundle['hash_prefix']}{digest}"


def _tool_entry(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A contracts/chamber.json tool back in the seed's ``canonical_tools`` shape."""
    entry = {k: tool[k] for k in ("name", "description", "aliases", "inputSchema", "outputSchema")
             if k in tool}  # fmt: skip
    purpose = tool.get("x-agora", {}).get("purpose")
    if purpose is not None:
        entry["purpose"] = purpose
    return entry


def contract_from_data(data: Any) -> ChamberContract:
    """Build the contract from `load_contract("chamber")`, its file data, or the seed itself.

    Args:
        data: An `agora.mcp.contracts.Contract` (its ``data`` is read), the decoded
            contracts/chamber.json (tools plus the seed under ``document``), or the seed
            document.

    Returns:
        The parsed contract.

    Raises:
        ValueError: if the data is not a chamber contract.
    """
    raw = getattr(data, "data", data)
    if not isinstance(raw, Mapping):
        raise ValueError("not a chamber contract")
    document = raw.get("document", raw)
    if not isinstance(document, Mapping) or "toolset_id" not in document:
        raise ValueError("not a chamber contract document")
    if "canonical_tools" not in document:
        tools = raw.get("tools")
        if not isinstance(tools, list):
            raise ValueError("a chamber contract without tools")
        document = {**document, "canonical_tools": [_tool_entry(t) for t in tools]}
    return ChamberContract(document)


@functools.cache
def default_contract() -> ChamberContract:
    """The contract shipped with agora (`agora.mcp.contracts.load_contract("chamber")`)."""
    # Imported late: the MCP layer owns the contract files, and tests may stand in for it.
    loader = importlib.import_module("agora.mcp.contracts")
    return contract_from_data(loader.load_contract("chamber"))
