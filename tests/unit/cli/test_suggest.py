"""`aurora tools suggest`'s pure parts: model settings, reading the model's answer, the diff; and
that a stored suggestion never changes what the deterministic publish checks say."""

from __future__ import annotations

import pytest

from aurora_cli.output import CliError
from aurora_cli.suggest import diff, drop_unknown, model_settings, parse_answer
from services.mcp_gateway.pool.lifecycle import publish_problems
from shared.contracts.suggestion import ToolSuggestion
from shared.contracts.system import System
from shared.contracts.tooldef import McpExecution, ToolDefinition

TOOL = {"name": "plant.read_point", "version": 2, "description": "read a point",
        "input_schema": {"type": "object", "properties": {"point": {"type": "string"}, "window": {"type": "integer"}}}}


def test_model_settings_take_flags_then_the_runners_variables() -> None:
    env = {"AURORA_MODEL_BASE_URL": "http://m:1/v1/", "AURORA_MODEL": "m1", "AURORA_MODEL_API_KEY_ENV": "K", "K": "s"}
    got = model_settings(env, base_url=None, model=None, api_key_env=None, timeout=5)
    assert (got.base_url, got.model, got.api_key) == ("http://m:1/v1", "m1", "s")
    assert model_settings(env, base_url="https://x", model="m2", api_key_env=None, timeout=5).model == "m2"
    with pytest.raises(CliError, match="AURORA_MODEL_BASE_URL"):
        model_settings({}, base_url=None, model=None, api_key_env=None, timeout=5)
    with pytest.raises(CliError, match="K, the variable"):
        model_settings({**env, "K": ""}, base_url=None, model=None, api_key_env=None, timeout=5)


def test_the_answer_is_read_from_a_code_fence_and_unknown_parameters_are_dropped() -> None:
    answer = 'Sure:\n```json\n{"description": " Read one point. ", "parameters": {"point": "The tag", "x": "?"},' \
             ' "units": {"window": "seconds"}, "note": "n"}\n```'
    suggestion = parse_answer(answer, "m1")
    assert suggestion == {"model": "m1", "description": "Read one point.", "note": "n",
                          "parameters": {"point": "The tag", "x": "?"}, "units": {"window": "seconds"}}
    assert drop_unknown(suggestion, TOOL) == ["x"] and suggestion["parameters"] == {"point": "The tag"}
    with pytest.raises(CliError, match="no JSON object"):
        parse_answer("it is fine", "m1")
    with pytest.raises(CliError, match="not an object"):
        parse_answer('{"parameters": ["a"]}', "m1")


def test_the_diff_shows_the_draft_against_the_suggestion() -> None:
    lines = diff(TOOL, {"model": "m1", "description": "Read one point.", "parameters": {"point": "The tag"},
                        "units": {"window": "seconds"}})
    assert lines[:2] == ["--- draft (version 2)", "+++ suggested by m1"]
    assert "-description: read a point" in lines and "+description: Read one point." in lines
    assert "+  point: The tag" in lines and "+  window: (no description) [unit: seconds]" in lines
    assert diff(TOOL, {"model": "m1", "description": "", "parameters": {}, "units": {}}) == []


def test_a_suggestion_never_changes_the_publish_checks() -> None:
    system = System(name="plant", type="mcp")
    draft = ToolDefinition(name="plant.read_point", system="plant", description="",
                           execution=McpExecution(app="plant", tool="read_point"))
    suggested = draft.model_copy(update={"suggestion": ToolSuggestion(model="m", description="Read one point.")})
    assert publish_problems(suggested, system) == publish_problems(draft, system) != []
    fine = draft.model_copy(update={"description": "Read one point."})
    odd = fine.model_copy(update={"suggestion": ToolSuggestion(model="m", description="")})
    assert publish_problems(odd, system) == publish_problems(fine, system) == []
