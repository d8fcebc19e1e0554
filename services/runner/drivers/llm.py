"""The llm driver: an OpenAI-compatible model proposes tool calls; the runner executes them
through the gateway, feeds the (truncated) results back, and takes the final message as the
answer. Skills (`kind: Skill`, read as stored at each run, see skills.py) are guidance in the
system prompt, never permissions; what must not be skipped is enforced by the gateway and the
task state machine, not asked of the model.

Every model turn is logged (`m1`, `m2` …) with the assistant message, and every tool call
(`m1.t1` …), so a resumed task rebuilds the conversation from its log instead of asking the
model again — the model's earlier proposals stay the ones that were acted on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from services.runner.config import ModelDefaults
from services.runner.context import RunContext
from services.runner.drivers.base import describe_failure, settle
from services.runner.drivers.prompt import event_message, system_prompt
from services.runner.errors import AwaitRetry, StepFailed
from services.runner.model import skills as skill_guidance
from services.runner.model.client import (
    ChatModel,
    ChatTurn,
    ModelCall,
    ModelFailed,
    ModelUnavailable,
    ToolCallProposal,
)
from services.runner.model.skills import SkillSource, load_skills
from services.runner.steps.results import for_model, truncate
from services.runner.steps.tool_steps import ToolSteps
from services.runner.tasks.interactions import EXECUTABLE_ACTION, Announcer, ask
from services.runner.tasks.notices import unfinished_writes
from services.runner.tools import actions as action_tool
from services.runner.tools import find_tools
from services.runner.tools import history as history_tool
from services.runner.tools.history import History
from shared.clock import now_iso
from shared.contracts.agent import Agent
from shared.contracts.task import StepError, TaskStep
from shared.i18n import say


@dataclass(frozen=True)
class Toolset:
    """An agent's tools as the gateway offers them right now."""

    descriptors: list[dict[str, Any]]
    names: dict[str, str]  # LLM function name → tool name
    side_effects: dict[str, str]  # tool name → read | write | dangerous


class AgentTools(Protocol):
    async def toolset(self, agent_id: str, delivery: dict[str, Any]) -> Toolset: ...


class LlmDriver:
    # A model chooses the path: each write's outcome is recorded at once (tool_steps).
    replayable = False

    def __init__(self, model: ChatModel, tools: AgentTools, steps: ToolSteps, history: History,
                 defaults: ModelDefaults, env: Callable[[str], str | None],
                 announcer: Announcer | None = None, skills: SkillSource | None = None) -> None:
        self._model = model
        self._skills = skills
        self._tools = tools
        self._steps = steps
        self._history = history
        self._defaults = defaults
        self._env = env
        self._announcer = announcer

    async def run(self, ctx: RunContext, agent: Agent, *, prefix: str = "", text: str | None = None) -> str | None:
        call = self._model_call(agent)
        skills = await load_skills(self._skills, agent)
        skill_guidance.record(ctx, skills, prefix=prefix)
        toolset = await self._tools.toolset(agent.id, ctx.delivery_wire())
        # A large set is searched (`find_tools`), not sent whole every turn: see find_tools.py.
        offer = find_tools.ToolOffer(toolset.descriptors, toolset.names, self._defaults.find_tools_above)
        extras = [history_tool.llm_descriptor()] if agent.event_history else []
        extras.append(action_tool.llm_descriptor())
        messages = [{"role": "system", "content": system_prompt(agent, ctx, skills)},
                    {"role": "user", "content": event_message(ctx, text)}]
        for round_no in range(1, agent.max_tool_rounds + 2):
            ctx.checkpoint()
            last = round_no > agent.max_tool_rounds
            if last:
                messages.append({"role": "system", "content": "The tool budget of this run is used up: "
                                 "answer now with what you have, and say what is missing."})
            turn = await self._turn(ctx, call, f"{prefix}m{round_no}", messages,
                                    None if last else [*offer.descriptors(), *extras], toolset.names)
            messages.append(turn.message())
            if last and (turn.tool_calls or not (turn.content or "").strip()):
                # Still calling tools (or silent) with the budget spent: the run never answered.
                raise StepFailed("max_tool_rounds", f"agent {agent.id} used its {agent.max_tool_rounds} tool "
                                 "rounds without answering", notice=budget_notice(agent.max_tool_rounds, agent.locale))
            if not turn.tool_calls or last:
                # A write that failed while an earlier one went through: the task ends partial.
                ctx.partial.extend(describe_failure(s) for s in unfinished_writes(ctx.handle.steps()))
                return turn.content
            for index, proposal in enumerate(turn.tool_calls, 1):
                ctx.checkpoint()
                result = await self._tool_call(ctx, agent, toolset, offer, f"{prefix}m{round_no}.t{index}",
                                               proposal)
                messages.append({"role": "tool", "tool_call_id": proposal.id, "content": result})
        raise AssertionError("unreachable")

    def _model_call(self, agent: Agent) -> ModelCall:
        settings, defaults = agent.model, self._defaults
        base_url = settings.base_url if settings else defaults.base_url
        model = settings.model if settings else defaults.model
        if not base_url or not model:
            raise StepFailed("no_model", f"agent {agent.id} names no model and the runner has no default "
                             "(AURORA_MODEL_BASE_URL, AURORA_MODEL)")
        key_env = settings.api_key_env if settings else defaults.api_key_env
        api_key = self._env(key_env) if key_env else None
        if api_key and self._steps.secrets is not None:
            self._steps.secrets.redactor.learn(api_key)  # a key read from a `*_env` never shows
        if key_env and not api_key:
            raise StepFailed("no_api_key", f"{key_env}, the environment variable of agent {agent.id}'s API key, "
                             "is not set")
        return ModelCall(base_url=base_url, model=model, api_key=api_key,
                         temperature=settings.temperature if settings else None,
                         max_tokens=settings.max_tokens if settings else defaults.max_tokens,
                         timeout=settings.timeout_seconds if settings else defaults.timeout_seconds)

    async def _turn(self, ctx: RunContext, call: ModelCall, step_id: str, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]] | None, tool_of: dict[str, str]) -> ChatTurn:
        prior = ctx.handle.step(step_id)
        if prior is not None and prior.done and isinstance(prior.structured, dict):
            return turn_from_log(prior.structured)
        started = now_iso()
        try:
            turn = await ctx.interruptible(self._model.complete(call, messages, tools))
        except ModelUnavailable as exc:  # nothing was asked of it: wait for it (durably) and ask again
            raise AwaitRetry(step_id, exc.code, str(exc), retry_after=exc.retry_after) from exc
        except ModelFailed as exc:
            raise StepFailed(exc.code, f"model call {step_id}: {exc}") from exc
        ctx.handle.stage(TaskStep(
            id=step_id, kind="model", name=call.model, status="finished", started_at=started, finished_at=now_iso(),
            # Secret arguments of the proposed calls are not kept: a resume gets them from the
            # tool step's sealed arguments (steps.py).
            structured={"message": self._kept(turn.message(), tool_of), "finish_reason": turn.finish_reason,
                        "usage": turn.usage},
            text=turn.content,
        ))
        return turn

    def _kept(self, message: dict[str, Any], tool_of: dict[str, str]) -> Any:
        secrets = self._steps.secrets
        return secrets.model_message(message, tool_of) if secrets is not None else message

    async def _tool_call(self, ctx: RunContext, agent: Agent, toolset: Toolset, offer: find_tools.ToolOffer,
                         step_id: str, proposal: ToolCallProposal) -> str:
        limit = agent.tool_result_limit
        try:
            arguments = json.loads(proposal.arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            return self._refuse(ctx, step_id, proposal.name, "invalid_arguments",
                                f"the arguments are not a JSON object: {exc}", limit)
        if proposal.name == history_tool.TOOL_NAME and agent.event_history:
            return await self._history_call(ctx, step_id, arguments, limit)
        if proposal.name == action_tool.TOOL_NAME:
            return await self._action_call(ctx, step_id, arguments, limit)
        if proposal.name == find_tools.TOOL_NAME and offer.searching:
            return self._find_call(ctx, step_id, arguments, offer, limit)
        tool = toolset.names.get(proposal.name)
        if tool is None:
            return self._refuse(ctx, step_id, proposal.name, "unknown_tool",
                                f"{proposal.name} is not one of this agent's tools", limit)
        step = await self._steps.run(ctx, step_id=step_id, tool=tool, arguments=arguments,
                                     side_effect=toolset.side_effects.get(tool))
        settle(step)
        return for_model(step, limit)

    def _find_call(self, ctx: RunContext, step_id: str, arguments: dict[str, Any], offer: find_tools.ToolOffer,
                   limit: int) -> str:
        prior = ctx.handle.step(step_id)
        if prior is not None and prior.done:  # resumed: what it found then is offered again
            offer.offer(find_tools.found_in(prior.structured))
            return for_model(prior, limit)
        started = now_iso()
        try:
            found = find_tools.answer(offer, arguments)
        except find_tools.BadSearch as exc:
            return self._refuse(ctx, step_id, find_tools.TOOL_NAME, "invalid_arguments", str(exc), limit)
        step = TaskStep(id=step_id, kind="tool", name=find_tools.TOOL_NAME, status="finished", started_at=started,
                        finished_at=now_iso(), side_effect="read", arguments=arguments, classification="ok",
                        structured=found, text=truncate(json.dumps(found, ensure_ascii=False), limit))
        ctx.handle.stage(step)
        return for_model(step, limit)

    def _refuse(self, ctx: RunContext, step_id: str, name: str, code: str, message: str, limit: int) -> str:
        step = TaskStep(id=step_id, kind="tool", name=name, status="finished", started_at=now_iso(),
                        finished_at=now_iso(), classification="denied", error=StepError(code=code, message=message))
        ctx.handle.stage(step)
        return for_model(step, limit)

    async def _action_call(self, ctx: RunContext, step_id: str, arguments: dict[str, Any], limit: int) -> str:
        """`request_action`: an interaction is asked (the task waits for the answer, which is this
        call's result on resume); any other action is only recorded."""
        prior = ctx.handle.step(step_id)
        if prior is not None and prior.kind == "action" and prior.done:
            return action_tool.telemetry_result(prior)
        if prior is not None and prior.kind == "tool" and prior.done:
            return for_model(prior, limit)  # refused earlier
        action = arguments.get("action")
        if not isinstance(action, str) or not action:
            return self._refuse(ctx, step_id, action_tool.TOOL_NAME, "invalid_arguments",
                                "action must be a non-empty string", limit)
        if action != EXECUTABLE_ACTION:
            kept = self._steps.secrets.redactor.arguments(arguments) if self._steps.secrets is not None else arguments
            step = action_tool.telemetry_step(step_id, action, kept)  # recorded only: nothing secret kept
            ctx.handle.stage(step)
            return action_tool.telemetry_result(step)
        question, options = arguments.get("question"), arguments.get("options", [])
        if prior is None:
            if not isinstance(question, str) or not question.strip():
                return self._refuse(ctx, step_id, action_tool.TOOL_NAME, "invalid_arguments",
                                    "interaction.requested needs a question", limit)
            if not isinstance(options, list) or not all(isinstance(o, str | int | float) for o in options):
                return self._refuse(ctx, step_id, action_tool.TOOL_NAME, "invalid_arguments",
                                    "options must be a list of strings", limit)
            target = ctx.delivery.reply_target
            if target is None or not (target.session_id or target.conversation):
                return self._refuse(ctx, step_id, action_tool.TOOL_NAME, "interaction_unavailable",
                                    "the event names no conversation to ask its user in", limit)
        answered = await ask(ctx, self._steps, self._announcer, step_id=step_id, question=question or "",
                             options=[str(o) for o in options or []])
        return action_tool.answer_result(answered, limit)

    async def _history_call(self, ctx: RunContext, step_id: str, arguments: dict[str, Any], limit: int) -> str:
        prior = ctx.handle.step(step_id)
        if prior is not None and prior.done:
            return for_model(prior, limit)
        count = arguments.get("limit", 10)
        types = arguments.get("types")
        count = min(max(count, 1), 50) if isinstance(count, int) and not isinstance(count, bool) else 10
        wanted = [t for t in types if isinstance(t, str)] if isinstance(types, list) else None
        started = now_iso()
        found = await ctx.interruptible(self._history.earlier(ctx.event, limit=count, types=wanted))
        step = TaskStep(id=step_id, kind="tool", name=history_tool.TOOL_NAME, status="finished", started_at=started,
                        finished_at=now_iso(), side_effect="read", arguments=arguments, classification="ok",
                        structured=found, text=truncate(json.dumps(found, ensure_ascii=False), limit))
        ctx.handle.stage(step)
        return for_model(step, limit)


def budget_notice(rounds: int, locale: str | None = None) -> str:
    """What the user is told when the agent ran out of tool rounds before answering."""
    return say(locale, "Sorry, I could not finish this request: I used all {rounds} of my tool rounds without "
               "reaching an answer. Please try again or ask an operator to look at it.", rounds=rounds)


def turn_from_log(logged: dict[str, Any]) -> ChatTurn:
    message = logged.get("message") or {}
    calls = tuple(
        ToolCallProposal(id=c["id"], name=c["function"]["name"], arguments=c["function"].get("arguments") or "{}")
        for c in message.get("tool_calls") or []
    )
    # `or None`: a tool-call turn is kept with `content: ""` (see ChatTurn.message), as the model sent none.
    return ChatTurn(content=message.get("content") or None, tool_calls=calls, finish_reason=logged.get("finish_reason"),
                    usage=logged.get("usage") or {})
