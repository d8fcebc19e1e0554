"""The runner's default model settings (AURORA_MODEL_*) and the call an agent without a model of
its own makes with them: the longest answer asked for among them."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from services.runner.config import ModelDefaults, load_runner_settings
from services.runner.drivers.llm import LlmDriver
from services.runner.model.client import ModelCall
from services.runner.tools.sampling import model_call_for
from shared.contracts.agent import Agent
from shared.errors import SettingsError

DEFAULTS = ModelDefaults(base_url="http://models.local/v1", model="house", max_tokens=256)
NO_ENV: dict[str, str] = {}


def agent(**fields: Any) -> Agent:
    return Agent.model_validate_json(json.dumps({"kind": "Agent", "id": "helper", "agent_kind": "llm", **fields}))


def test_the_longest_answer_is_read_from_the_environment() -> None:
    assert load_runner_settings({"AURORA_MODEL_MAX_TOKENS": "256"}).models.max_tokens == 256
    assert load_runner_settings({}).models.max_tokens is None  # the server's own limit
    assert load_runner_settings({"AURORA_MODEL_MAX_TOKENS": "0"}).models.max_tokens is None
    with pytest.raises(SettingsError, match="AURORA_MODEL_MAX_TOKENS"):
        load_runner_settings({"AURORA_MODEL_MAX_TOKENS": "many"})


def test_an_agent_on_the_runners_model_asks_for_at_most_its_default() -> None:
    default = model_call_for(agent(), DEFAULTS, NO_ENV.get)
    assert isinstance(default, ModelCall) and default.max_tokens == 256
    # An agent naming its own model says its own limit (none here): the default is another server's.
    own = model_call_for(agent(model={"base_url": "http://own/v1", "model": "m1"}), DEFAULTS, NO_ENV.get)
    assert isinstance(own, ModelCall) and own.max_tokens is None
    limited = model_call_for(agent(model={"base_url": "http://own/v1", "model": "m1", "max_tokens": 64}), DEFAULTS,
                             NO_ENV.get)
    assert isinstance(limited, ModelCall) and limited.max_tokens == 64


def test_the_llm_driver_asks_the_same() -> None:
    nothing = cast(Any, None)  # what _model_call does not touch without an API key
    driver = LlmDriver(nothing, nothing, nothing, nothing, DEFAULTS, env=NO_ENV.get)
    assert driver._model_call(agent()).max_tokens == 256
    assert driver._model_call(agent(model={"base_url": "http://own/v1", "model": "m1"})).max_tokens is None
