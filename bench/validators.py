"""Validations per second: agora's compiled validators against jsonschema, on contract arguments.

For representative chamber, chess and router arguments (valid ones, and a few invalid ones for
the error path) it times, on one core and in one run:

- ``agora check``: `agora.mcp.validation.Validator.check` (depth/size guard + fastjsonschema),
- ``fastjsonschema``: the bare function fastjsonschema compiles from the same schema,
- ``jsonschema``: a pre-built ``Draft7Validator(schema).is_valid``,

and prints a table with the ratio agora/jsonschema. Nothing here runs in CI.

Usage: ``.venv/bin/python bench/validators.py [--seconds 0.3]``
"""

from __future__ import annotations

import argparse
import time

import fastjsonschema
import jsonschema
from cli_args import positive_float

from agora.mcp.contracts import load_contract
from agora.mcp.validation import ArgumentError, compile_validator, normalise_schema

HANDLE = "chl-0123456789abcdef"
CONTEXT = {"session_id": "sess-1", "actor": "agent-1", "runtime_policy_snapshot_id": "pol-7"}
DIGEST = "sha256:" + "ab" * 32

CASES = [
    # (label, toolset, tool, arguments, valid?)
    (
        "chess move_piece",
        "chess",
        "move_piece",
        {"from": "e2", "to": "e4", "note": "Centre."},
        True,
    ),
    ("chess move bad square", "chess", "move_piece", {"from": "e9", "to": "e4"}, False),
    ("chess wait_for_turn", "chess", "wait_for_turn", {"timeout_ms": 55000}, True),
    (
        "chamber enter",
        "chamber",
        "enter_open_challenge",
        {
            "product": "gpt-5.6-sol",
            "host": "cursor",
            "provider_claim": "unknown",
            "model_claim": "unknown",
            "suite": "chambre-chrono-v0",
            "origin": "uninvited",
            "preflight": {"tools_visible": True, "actions_available": True},
        },
        True,
    ),
    (
        "chamber action",
        "chamber",
        "chamber_action",
        {
            "challenge_handle": HANDLE,
            "op": "submit_order",
            "value": ["brass", "oak", "iron"],
            "expected_action_index": 12,
        },
        True,
    ),
    (
        "chamber action bad op",
        "chamber",
        "chamber_action",
        {"challenge_handle": HANDLE, "op": "teleport"},
        False,
    ),
    (
        "router plan_work",
        "router",
        "plan_work",
        {
            "context": CONTEXT,
            "expected_state_version": 3,
            "idempotency_key": "idem-42",
            "correlation_id": "corr-42",
            "objective": "Ship the release notes",
            "goal_binding_id": None,
            "requested_work_mode": "phased",
            "explicit_skill_ids": ["docs-writer"],
            "explicit_semantics": "use",
            "routing_context": {
                "workspace_root": "/srv/repo",
                "domains": ["docs"],
                "tags": ["release", "notes"],
                "current_phase_id": None,
            },
        },
        True,
    ),
    (
        "router record_route_feedback",
        "router",
        "record_route_feedback",
        {
            "context": CONTEXT,
            "workspace_root": None,
            "idempotency_key": "idem-43",
            "correlation_id": "corr-43",
            "workflow_run_id": "run-9",
            "observation_id": "observation:" + "0f" * 16,
            "feedback_type": "corrected",
            "reason_code": "user-correction",
            "correction_dimensions": ["primary-skill"],
            "original_route_digest": DIGEST,
            "corrected_route_digest": DIGEST,
        },
        True,
    ),
]


def rate(fn, value, seconds: float) -> float:
    """Calls of ``fn(value)`` per second, over at least ``seconds``."""
    loops, elapsed = 64, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            fn(value)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return loops / elapsed
        loops *= 2


def quietly(fn):
    """Wrap a raising validator so the error path is timed including the raise and catch."""

    def call(value):
        # try/except rather than contextlib.suppress: the wrapper's cost is part of every cell.
        try:  # noqa: SIM105
            fn(value)
        except (ArgumentError, fastjsonschema.JsonSchemaValueException):
            pass

    return call


def main() -> None:
    """Run every case and print the table."""
    parser = argparse.ArgumentParser(description="validator throughput")
    parser.add_argument("--seconds", type=positive_float, default=0.3, help="minimum time per cell")
    seconds = parser.parse_args().seconds
    header = f"{'case':30} {'agora check':>13} {'fastjsonschema':>15} {'jsonschema':>12} {'x':>6}"
    print(header)
    print("-" * len(header))
    for label, toolset, tool, args, valid in CASES:
        schema = load_contract(toolset).tools[tool].input_schema
        ours = compile_validator(schema)
        bare = fastjsonschema.compile(normalise_schema(schema), use_default=False)
        reference = jsonschema.Draft7Validator(schema)
        assert ours.is_valid(args) is valid is reference.is_valid(args), label
        a = rate(quietly(ours.check), args, seconds)
        f = rate(quietly(bare), args, seconds)
        j = rate(reference.is_valid, args, seconds)
        print(f"{label:30} {a:13,.0f} {f:15,.0f} {j:12,.0f} {a / j:6.1f}")
    start = time.perf_counter()
    count = 0
    for toolset in ("chamber", "chess", "router"):
        for spec in load_contract(toolset).tools.values():
            for schema in (spec.input_schema, spec.output_schema):
                if schema is not None:
                    compile_validator(schema)
                    count += 1
    took = time.perf_counter() - start
    print(f"\ncompiling all {count} contract schemas: {took * 1000:.0f} ms")


if __name__ == "__main__":
    main()
