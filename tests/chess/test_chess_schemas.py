"""The outputSchemas exported for contracts/chess.json, and the argument-rejection body."""

from __future__ import annotations

import json

import jsonschema
import pytest

from agora.toolsets.chess.render import argument_rejection
from agora.toolsets.chess.schemas import OUTPUT_SCHEMAS, REJECTION_SCHEMA

COMMON = {
    "protocolVersion",
    "statusCode",
    "nextAction",
    "agentMayMove",
    "fen",
    "pieces",
    "sideToMove",
    "history",
    "ownership",
    "legalMoves",
    "lastMove",
    "result",
}


def test_there_is_one_schema_per_tool():
    assert set(OUTPUT_SCHEMAS) == {"join_game", "get_board", "move_piece", "wait_for_turn"}


@pytest.mark.parametrize("tool", sorted(OUTPUT_SCHEMAS))
def test_each_schema_is_self_contained_and_requires_the_common_fields(tool):
    schema = OUTPUT_SCHEMAS[tool]
    assert schema["type"] == "object"
    text = json.dumps(schema)
    assert "$ref" not in text
    assert "$defs" not in text
    assert set(schema["required"]) >= COMMON
    jsonschema.Draft7Validator.check_schema(schema)


@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        pytest.param("join_game", {"collaborationContract", "evaluationGuide"}, id="join"),
        pytest.param("get_board", {"evaluationGuide"}, id="board"),
        pytest.param("move_piece", {"played"}, id="move"),
        pytest.param("wait_for_turn", {"evaluationGuide"}, id="wait"),
    ],
)
def test_each_tool_adds_its_own_part(tool, extra):
    assert set(OUTPUT_SCHEMAS[tool]["required"]) - COMMON >= extra


def test_the_status_codes_are_documented_in_the_schema():
    status = OUTPUT_SCHEMAS["wait_for_turn"]["properties"]["statusCode"]
    assert set(status["enum"]) == {
        "SIDE_CHOICE_REQUIRED",
        "AGENT_TURN",
        "HUMAN_TURN",
        "GAME_OVER",
        "WAIT_TIMEOUT",
    }


def test_invalid_arguments_get_the_chess_rejection_shape():
    body = argument_rejection(["argument 'from': must match pattern ^[a-h][1-8]$"])
    jsonschema.validate(body, REJECTION_SCHEMA)
    assert body["code"] == "INVALID_ARGUMENTS"
    assert body["nextAction"]["tool"] == "get_board"
