"""The outputSchemas exported for contracts/chess.json, and the argument-rejection body."""

from __future__ import annotations

import json

import jsonschema
import pytest

from agora.toolsets.chess.arguments import argument_rejection
from agora.toolsets.chess.schemas import OUTPUT_SCHEMAS, REJECTION_SCHEMA

COMMON = {
    "ok",
    "protocolVersion",
    "statusCode",
    "message",
    "nextAction",
    "agentMayMove",
    "seat",
    "fen",
    "board",
    "sideToMove",
    "legalMoves",
    "lastMove",
    "drawOffer",
    "drawDeclined",
    "result",
}
REFUSAL = {"ok", "protocolVersion", "code", "error", "statusCode", "nextAction", "legalMoves"}


def _reply(tool: str) -> dict:
    reply, refusal = OUTPUT_SCHEMAS[tool]["anyOf"]
    assert refusal == REJECTION_SCHEMA
    return reply


def test_there_is_one_schema_per_tool():
    assert set(OUTPUT_SCHEMAS) == {"join_game", "get_board", "move_piece", "wait_for_turn"}


@pytest.mark.parametrize("tool", sorted(OUTPUT_SCHEMAS))
def test_each_schema_is_self_contained_and_accepts_the_reply_or_a_refusal(tool):
    schema = OUTPUT_SCHEMAS[tool]
    assert schema["type"] == "object"
    text = json.dumps(schema)
    assert "$ref" not in text
    assert "$defs" not in text
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft7Validator.check_schema(schema)
    assert set(_reply(tool)["required"]) >= COMMON
    assert _reply(tool)["properties"]["ok"] == {"const": True}
    assert set(REJECTION_SCHEMA["required"]) >= REFUSAL
    assert REJECTION_SCHEMA["properties"]["ok"] == {"const": False}


@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        pytest.param("join_game", {"collaborationContract", "history"}, id="join"),
        pytest.param(
            "get_board",
            {"evaluationGuide", "history", "pieces", "ownership", "human"},
            id="board",
        ),
        pytest.param("move_piece", set(), id="move"),
        pytest.param("wait_for_turn", {"evaluationGuide", "human"}, id="wait"),
    ],
)
def test_each_tool_adds_its_own_part(tool, extra):
    common = set(_reply("move_piece")["required"])
    assert common >= COMMON
    assert set(_reply(tool)["required"]) - common == extra


def test_the_status_codes_are_documented_in_the_schema():
    status = _reply("wait_for_turn")["properties"]["statusCode"]
    assert set(status["enum"]) == {
        "SIDE_CHOICE_REQUIRED",
        "AGENT_TURN",
        "HUMAN_TURN",
        "GAME_OVER",
        "WAIT_TIMEOUT",
        "AGENT_TOKEN_REQUIRED",
        "AGENT_TOKEN_INVALID",
        "INVALID_ARGUMENTS",
        "TABLE_NOT_FOUND",
        "SERVER_ERROR",
    }
    assert REJECTION_SCHEMA["properties"]["statusCode"] == status


@pytest.mark.parametrize("tool", sorted(OUTPUT_SCHEMAS))
def test_invalid_arguments_get_the_chess_rejection_shape(tool):
    body = argument_rejection(["argument 'from': must match pattern ^[a-h][1-8]$"])
    jsonschema.validate(body, OUTPUT_SCHEMAS[tool])
    assert body["code"] == "INVALID_ARGUMENTS"
    assert body["statusCode"] == "INVALID_ARGUMENTS"
    assert body["nextAction"]["tool"] == "get_board"


@pytest.mark.parametrize("tool", ["get_board", "wait_for_turn"])
def test_the_human_seat_is_declared_with_what_each_value_means(tool):
    human = _reply(tool)["properties"]["human"]
    assert sorted(human["enum"]) == ["absent", "away", "connected"]
    for value in human["enum"]:
        assert f"{value} (" in human["description"]
