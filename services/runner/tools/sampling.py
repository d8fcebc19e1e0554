"""`<p>.model.sample`: an app asked for a model completion during one of an agent's tool calls
(MCP `sampling/createMessage`); the gateway relays it here because the runners hold the agents'
model settings and keys. Answered with the agent's own model (its `model`, else the runner's
default), without tools; an agent that has no model — a playbook, or an llm agent with neither
its own model nor a default — is refused with the reason (`no_model`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack, suppress

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import Error as NatsError

from services.runner.catalog import AgentCatalog
from services.runner.config import ModelDefaults
from services.runner.model.client import ChatModel, ModelCall, ModelFailed
from shared.contracts import sampling as contract
from shared.contracts.agent import Agent
from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle, unsubscribe
from shared.nats.request_guard import refusing_deliveries
from shared.observability.logs import get_logger

log = get_logger("aurora.runner.sampling")
QUEUE = "runners"


def model_call_for(agent: Agent, defaults: ModelDefaults, env: Callable[[str], str | None]) -> ModelCall | str:
    """Where the agent's model is, resolved as the llm driver's `_model_call` does (keep them
    alike), or why it has none."""
    if agent.agent_kind != "llm":
        return f"agent {agent.id} is a {agent.agent_kind} agent: it has no model"
    settings = agent.model
    base_url = settings.base_url if settings else defaults.base_url
    model = settings.model if settings else defaults.model
    if not base_url or not model:
        return f"agent {agent.id} names no model and the runner has no default (AURORA_MODEL_BASE_URL, AURORA_MODEL)"
    key_env = settings.api_key_env if settings else defaults.api_key_env
    api_key = env(key_env) if key_env else None
    if key_env and not api_key:
        return f"{key_env}, the environment variable of agent {agent.id}'s API key, is not set"
    return ModelCall(base_url=base_url, model=model, api_key=api_key,
                     temperature=settings.temperature if settings else None,
                     max_tokens=settings.max_tokens if settings else defaults.max_tokens,
                     timeout=settings.timeout_seconds if settings else defaults.timeout_seconds)


def messages_of(request: contract.SampleRequest) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": request.system_prompt}] if request.system_prompt else []
    return messages + [{"role": m.role, "content": m.text} for m in request.messages]


class SamplingServer(Lifecycle[None]):
    def __init__(self, nc: NATS, subjects: Subjects, catalog: AgentCatalog, model: ChatModel, defaults: ModelDefaults,
                 env: Callable[[str], str | None]) -> None:
        super().__init__("the sampling server")
        self._nc = nc
        self._subject = subjects.model_sample
        self._catalog = catalog
        self._model = model
        self._defaults = defaults
        self._env = env
        self._answering: set[asyncio.Task[None]] = set()

    async def _start(self, parts: AsyncExitStack) -> None:
        parts.callback(self._give_up)  # after the subscription below ended: no new request comes
        # Only the gateway may publish here; a stream delivery (any identity's push consumer) is refused.
        parts.push_async_callback(unsubscribe, await self._nc.subscribe(
            self._subject, queue=QUEUE, cb=refusing_deliveries(self._subject, self._on_request)))

    def _give_up(self) -> None:
        for task in list(self._answering):  # the apps asking get no answer: their calls end as they end
            task.cancel()

    async def _on_request(self, msg: Msg) -> None:
        # nats-py runs one subscription's callbacks one after another: a model call of seconds
        # must not hold up the next request, so each is answered in a task of its own.
        task = asyncio.create_task(self._respond(msg), name="runner-sample")
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def _respond(self, msg: Msg) -> None:
        reply = await self.answer(msg.data)
        with suppress(NatsError):
            await msg.respond(contract.encode(reply))

    async def answer(self, data: bytes) -> contract.SampleReply:
        try:
            request = contract.decode_request(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return _error("invalid_request", f"malformed sampling request: {exc}")
        agent = await self._catalog.agent(request.agent)
        if agent is None:
            return _error("unknown_agent", f"no agent {request.agent!r}")
        call = model_call_for(agent, self._defaults, self._env)
        if isinstance(call, str):
            return _error("no_model", call)
        limit = min(request.max_tokens, call.max_tokens) if call.max_tokens else request.max_tokens
        call = ModelCall(base_url=call.base_url, model=call.model, api_key=call.api_key,
                         temperature=request.temperature if request.temperature is not None else call.temperature,
                         max_tokens=limit, timeout=call.timeout)
        try:
            turn = await self._model.complete(call, messages_of(request), None)
        except ModelFailed as exc:
            log.info("sampling failed", agent=agent.id, app=request.app, code=exc.code)
            return _error(exc.code, str(exc))
        log.info("sampled", agent=agent.id, app=request.app, task=request.task_id)
        return contract.SampleReply(text=turn.content or "", model=call.model, stop_reason=_stop(turn.finish_reason))


def _stop(finish_reason: str | None) -> str | None:
    return {"stop": "endTurn", "length": "maxTokens"}.get(finish_reason or "", finish_reason)


def _error(code: str, message: str) -> contract.SampleReply:
    return contract.SampleReply(error=contract.SampleError(code=code, message=message))
