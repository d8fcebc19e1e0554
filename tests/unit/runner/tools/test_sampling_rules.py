"""Which model answers an app's sampling request for an agent, and how its progress notes read
as task steps (pure)."""

from __future__ import annotations

import json
from typing import Any

from services.runner.config import ModelDefaults
from services.runner.model.client import ModelCall
from services.runner.steps.tool_steps import progress_steps
from services.runner.tools.sampling import messages_of, model_call_for
from shared.contracts.agent import Agent
from shared.contracts.sampling import SampleMessage, SampleRequest
from shared.contracts.toolcall import ToolCallResult, ToolProgress
from tests.unit.runner.factories import a_step

DEFAULTS = ModelDefaults(base_url="http://models.local/v1", model="house", api_key_env="HOUSE_KEY")


def agent(**fields: Any) -> Agent:
    return Agent.model_validate_json(json.dumps({"kind": "Agent", "id": "helper", "agent_kind": "llm", **fields}))


def test_the_agents_own_model_else_the_runners_default() -> None:
    own = model_call_for(agent(model={"base_url": "http://own/v1", "model": "m1", "temperature": 0.2}), DEFAULTS,
                         {}.get)
    assert own == ModelCall(base_url="http://own/v1", model="m1", temperature=0.2)
    default = model_call_for(agent(), DEFAULTS, {"HOUSE_KEY": "sk-1"}.get)
    assert isinstance(default, ModelCall) and default.model == "house" and default.api_key == "sk-1"


def test_an_agent_without_a_model_is_told_why() -> None:
    playbook = agent(agent_kind="playbook", events=["message.received"],
                     playbook={"steps": [], "answer": "hi"})
    assert model_call_for(playbook, DEFAULTS, {}.get) == "agent helper is a playbook agent: it has no model"
    assert "names no model" in str(model_call_for(agent(), ModelDefaults(), {}.get))
    assert model_call_for(agent(), DEFAULTS, {}.get) == ("HOUSE_KEY, the environment variable of agent helper's "
                                                         "API key, is not set")


def test_the_apps_messages_follow_its_system_prompt() -> None:
    request = SampleRequest(agent="helper", app="test.elicit", max_tokens=10, system_prompt="be brief",
                            messages=[SampleMessage(role="user", text="hi")])
    assert messages_of(request) == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


def test_each_progress_note_is_a_finished_step_of_the_call() -> None:
    call = a_step("book", status="finished")
    result = ToolCallResult(status="ok", progress=[ToolProgress(progress=1, total=3, message="looking", at="t1"),
                                                   ToolProgress(message="almost", at="t2")])
    steps = progress_steps(call, result)
    assert [(s.id, s.kind, s.text, s.started_at) for s in steps] == [
        ("book.progress1", "progress", "1/3 looking", "t1"), ("book.progress2", "progress", "almost", "t2")]
    assert progress_steps(call, ToolCallResult(status="ok")) == []
