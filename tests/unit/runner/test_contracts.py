"""The agent and pipeline specs the runner reads: strict at `apply`, with clear errors."""

from __future__ import annotations

from typing import Any

import pytest

from shared.contracts.agent import Agent
from shared.contracts.pipeline import AgentStage, Pipeline, UnknownStageType, stage_config
from shared.contracts.resource import ResourceError, parse_resource


def agent(**fields: Any) -> Agent:
    return parse_resource(Agent, {"id": "a", "agent_kind": "playbook", **fields})


def test_model_settings_name_the_key_variable_never_the_key() -> None:
    llm = agent(agent_kind="llm", model={"base_url": "http://127.0.0.1:11434/v1", "model": "qwen2.5",
                                         "api_key_env": "OPENAI_API_KEY", "timeout_seconds": 20, "temperature": 0})
    assert llm.model is not None and llm.model.timeout_seconds == 20.0 and llm.model.api_key_env == "OPENAI_API_KEY"
    for bad, field in [({"base_url": "ftp://x", "model": "m"}, "model.base_url"),
                       ({"base_url": "http://x", "model": "m", "api_key_env": "sk-123 secret"}, "model.api_key_env"),
                       ({"base_url": "http://x", "model": "m", "api_key": "sk-1"}, "model.api_key"),
                       ({"base_url": "http://x"}, "model.model")]:
        with pytest.raises(ResourceError, match=field.replace(".", r"\.")):
            agent(agent_kind="llm", model=bad)


def test_playbook_steps_have_unique_identifier_ids() -> None:
    ok = agent(playbook={"steps": [{"id": "search", "tool": "a.b", "arguments": {"q": "{{ event.data.q }}"}},
                                   {"id": "profile", "tool": "a.c", "when": "steps.search.ok"}],
                         "answer": "{{ steps.profile.text }}"})
    assert ok.playbook is not None and [s.id for s in ok.playbook.steps] == ["search", "profile"]
    with pytest.raises(ResourceError, match="used twice"):
        agent(playbook={"steps": [{"id": "x", "tool": "a.b"}, {"id": "x", "tool": "a.c"}]})
    with pytest.raises(ResourceError, match="reserved"):
        agent(playbook={"steps": [{"id": "deliver", "tool": "a.b"}]})
    with pytest.raises(ResourceError, match=r"playbook\.steps\.0\.id"):
        agent(playbook={"steps": [{"id": "has-dash", "tool": "a.b"}]})
    with pytest.raises(ResourceError, match="only for agent_kind playbook"):
        agent(agent_kind="llm", playbook={"steps": []})


def test_limits_are_bounded() -> None:
    assert agent().max_tool_rounds == 8 and agent().tool_result_limit == 4000
    with pytest.raises(ResourceError, match="max_tool_rounds"):
        agent(max_tool_rounds=0)


def test_how_long_an_agent_waits_for_an_unavailable_target_is_bounded() -> None:
    assert agent().retry_unavailable_seconds == 600.0
    assert agent(retry_unavailable_seconds=5).retry_unavailable_seconds == 5.0
    for bad in (0, -1, 8 * 24 * 3600, "soon"):
        with pytest.raises(ResourceError, match="retry_unavailable_seconds"):
            agent(retry_unavailable_seconds=bad)


def test_known_stage_configs_are_checked_at_apply_unknown_types_at_run_time() -> None:
    pipeline = parse_resource(Pipeline, {"id": "p", "stages": [
        {"name": "f", "type": "filter", "config": {"pattern": "\\?$"}},
        {"name": "ai", "type": "agent", "config": {"agent": "helper"}},
        {"name": "later", "type": "telepathy"}]})
    assert isinstance(stage_config(pipeline.stages[1]), AgentStage)
    with pytest.raises(UnknownStageType, match="'later' has the unknown type 'telepathy'"):
        stage_config(pipeline.stages[2])
    with pytest.raises(ResourceError, match=r"config\.agent"):
        parse_resource(Pipeline, {"id": "p", "stages": [{"name": "ai", "type": "agent", "config": {}}]})
    with pytest.raises(ResourceError, match="used twice: x"):
        parse_resource(Pipeline, {"id": "p", "stages": [{"name": "x", "type": "output"},
                                                        {"name": "x", "type": "output"}]})
