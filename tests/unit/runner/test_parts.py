"""Results into step entries, model turns from the wire and from the log, settings."""

from __future__ import annotations

import json

import pytest

from services.runner.config import load_runner_settings
from services.runner.drivers.llm import turn_from_log
from services.runner.model.client import ChatTurn, ModelFailed, ToolCallProposal, parse_turn
from services.runner.steps.results import bounded, business_ids, for_model, step_view, truncate
from shared.contracts.task import StepError
from shared.errors import ConfigError
from tests.unit.runner.factories import a_step


def test_business_ids_are_the_identifier_looking_fields_with_their_paths() -> None:
    found = business_ids({"id": 7, "assetCode": "AS-1", "name": "pump", "flag": True, "order_no": "SO-1",
                          "items": [{"ticket_id": "T-1", "qty": 2}], "deep": {"a": {"b": {"c": {"x_id": 1}}}}})
    assert found == {"id": 7, "assetCode": "AS-1", "order_no": "SO-1", "items[0].ticket_id": "T-1"}


def test_truncation_and_bounds() -> None:
    assert truncate("abc", 10) == "abc"
    cut = truncate("x" * 500, 100)
    assert len(cut) <= 100 + 40 and "truncated, 500 characters" in cut
    assert bounded({"a": "x" * 10}, 100) == {"a": "x" * 10} and bounded({"a": "x" * 200}, 100) is None


def test_what_the_model_reads_of_a_step() -> None:
    ok = json.loads(for_model(a_step(classification="ok", structured={"v": 1}), 1000))
    assert ok == {"status": "ok", "result": {"v": 1}}
    failed = json.loads(for_model(a_step(classification="denied", error=StepError(code="not_bound", message="no")),
                                  1000))
    assert failed == {"status": "denied", "error": {"code": "not_bound", "message": "no"}}
    assert len(for_model(a_step(classification="ok", text="y" * 5000), 300)) <= 300


def test_a_skipped_step_looks_empty_to_templates() -> None:
    view = step_view(a_step(status="skipped"))
    assert view["skipped"] is True and view["ok"] is False and view["structured"] is None


def test_a_chat_completions_response_becomes_a_turn_and_back() -> None:
    raw = json.dumps({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_alarm", "arguments": "{\"alarm_id\": \"A\"}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"total_tokens": 9}}).encode()
    turn = parse_turn(raw)
    assert turn.tool_calls == (ToolCallProposal(id="c1", name="get_alarm", arguments='{"alarm_id": "A"}'),)
    assert turn.finish_reason == "tool_calls" and turn.usage == {"total_tokens": 9}
    logged = {"message": turn.message(), "finish_reason": turn.finish_reason, "usage": turn.usage}
    assert turn_from_log(json.loads(json.dumps(logged))) == turn
    assert ChatTurn(content="hi").message() == {"role": "assistant", "content": "hi"}
    # Tool calls without text: `content: ""`, as llama-cpp-python's server refuses null and a missing one.
    assert ChatTurn(content=None, tool_calls=(ToolCallProposal("c1", "f", "{}"),)).message()["content"] == ""


@pytest.mark.parametrize("raw", [b"not json", b"{}", b'{"choices": []}', b'{"choices": [{"message": 3}]}'])
def test_anything_else_is_a_bad_response(raw: bytes) -> None:
    with pytest.raises(ModelFailed) as failed:
        parse_turn(raw)
    assert failed.value.code == "model_bad_response"


def test_settings_fail_fast_naming_the_variable() -> None:
    config = load_runner_settings({"AURORA_RUNNER_CONCURRENCY": "4", "AURORA_RUNNER_ACK_WAIT_SECONDS": "6",
                                 "AURORA_MODEL_BASE_URL": "http://llm:8000/v1", "AURORA_MODEL": "qwen"})
    assert config.concurrency == 4 and config.heartbeat == 2.0 and config.models.model == "qwen"
    for env, field in [({"AURORA_RUNNER_CONCURRENCY": "0"}, "AURORA_RUNNER_CONCURRENCY"),
                       ({"AURORA_RUNNER_CONCURRENCY": "many"}, "AURORA_RUNNER_CONCURRENCY"),
                       ({"AURORA_RUNNER_ACK_WAIT_SECONDS": "0.1"}, "AURORA_RUNNER_ACK_WAIT_SECONDS"),
                       ({"AURORA_MODEL_BASE_URL": "llm:8000"}, "AURORA_MODEL_BASE_URL")]:
        with pytest.raises(ConfigError, match=field):
            load_runner_settings(env)
