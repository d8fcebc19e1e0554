"""The real small model's server, as the runner calls it, and the scripted stand-in held to it.

SmolLM2-135M-Instruct on llama-cpp-python's OpenAI-compatible server (`make model-venv`) answers
the runner's own Chat Completions client (`HttpChatModel`, the request it sends every llm turn:
the agent's tools and `tool_choice: auto`). The stand-in every other llm test uses
(tests/fakes/openai_server.py) must answer the same request in the same shape — the fields, the
`tool_calls` structure, `finish_reason` — or those tests prove things of a server that does not
exist. The runner asks without `stream`, so no streamed shape is compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.runner.model.client import HttpChatModel, ModelCall, parse_turn
from services.runner.tools import actions as action_tool
from tests.fakes.openai_server import FakeOpenAI
from tests.harness.real_model import ModelVenvMissing, RealModel, model_python

pytestmark = [pytest.mark.model, pytest.mark.timeout(600)]

FIND_DEVICE = {"type": "function", "function": {
    "name": "demo_industrial_find_device",
    "description": "Find an industrial device by its id or name mentioned in free text.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "the user's text"}},
                   "required": ["text"]}}}
TOOLS = [FIND_DEVICE, action_tool.llm_descriptor()]
MESSAGES = [{"role": "system", "content": "You answer questions about industrial devices. Use the tools."},
            {"role": "user", "content": 'The current event (JSON):\n{"type": "message.received", '
                                        '"data": {"text": "设备 C-3 最近的告警和资产档案"}}'}]
FORCED = {"type": "function", "function": {"name": "demo_industrial_find_device"}}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealModel]:
    with RealModel.start(tmp_path_factory.mktemp("model")) as running:
        yield running


async def test_the_runners_client_gets_an_answer_with_tools_from_the_real_model(model: RealModel) -> None:
    async with httpx.AsyncClient() as client:
        turn = await HttpChatModel(client).complete(ModelCall(base_url=model.base_url, model=model.name, timeout=120),
                                                     MESSAGES, TOOLS)
    assert turn.tool_calls or (turn.content or "").strip(), turn
    offered = {t["function"]["name"] for t in TOOLS}
    for call in turn.tool_calls:  # what the runner acts on: a named function with JSON text arguments
        assert call.id and call.name in offered, turn
        assert isinstance(json.loads(call.arguments), dict), turn
    assert turn.finish_reason == ("tool_calls" if turn.tool_calls else "stop") or turn.finish_reason == "length", turn


@pytest.mark.parametrize("case", ["forced-tool-call", "auto", "no-tools"])
def test_the_stand_in_answers_in_the_shape_the_real_server_does(case: str, model: RealModel) -> None:
    body: dict[str, Any] = {"model": model.name, "messages": MESSAGES, "max_tokens": 256}
    if case != "no-tools":
        body |= {"tools": TOOLS, "tool_choice": FORCED if case == "forced-tool-call" else "auto"}
    real = _post(model.base_url, body)
    proposed = real["choices"][0]["message"].get("tool_calls") or []
    chosen = proposed[0]["function"]["name"] if proposed else None
    # The stand-in scripted to do what the real model chose (with `auto` it may answer in text,
    # or call another of the tools).
    stand_in = FakeOpenAI().start()
    stand_in.script(model.name, lambda chat: chat.call(chosen, text="C-3") if chosen else chat.answer("C-3"))
    try:
        fake = _post(stand_in.base_url, body)
    finally:
        stand_in.stop()
    assert shape(fake) == shape(real), f"real: {json.dumps(real, ensure_ascii=False)}\n" \
                                       f"stand-in: {json.dumps(fake, ensure_ascii=False)}"
    real_choice, fake_choice = real["choices"][0], fake["choices"][0]
    if chosen is not None:
        assert chosen in {t["function"]["name"] for t in TOOLS}
        if case == "forced-tool-call":
            assert chosen == "demo_industrial_find_device"
        assert real_choice["finish_reason"] == fake_choice["finish_reason"] == "tool_calls"
        for answered in (real, fake):
            [call] = answered["choices"][0]["message"]["tool_calls"]
            assert call["type"] == "function" and call["function"]["name"] == chosen
            assert isinstance(call["function"]["arguments"], str)  # JSON text (a 135M model's may not parse)
    else:
        assert fake_choice["finish_reason"] == "stop" and real_choice["finish_reason"] in ("stop", "length")
    # And the runner reads both alike.
    read_real, read_fake = (parse_turn(json.dumps(answered).encode()) for answered in (real, fake))
    assert len(read_real.tool_calls) == len(read_fake.tool_calls)


def shape(value: Any) -> Any:
    """The structure of a JSON value: objects by their keys, lists by their first item, scalars by
    their type (a string's or number's value differs from answer to answer; null stays null)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if value is None:
        return None
    return "number" if isinstance(value, int | float) and not isinstance(value, bool) else type(value).__name__


def _post(base_url: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = httpx.post(f"{base_url}/chat/completions", json=body, timeout=120)
    assert reply.status_code == 200, reply.text
    answered: dict[str, Any] = reply.json()
    return answered


def test_the_harness_says_what_to_run_when_the_model_venv_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ModelVenvMissing, match="make model-venv"):
        model_python(tmp_path / "no-venv")
