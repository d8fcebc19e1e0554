"""The pipeline driver: the message stage chain (filter → pre-process → AI → post-process → output).

Stages other than the AI step are pure text transforms, recomputed on a resume; the AI stage
runs an agent whose step ids are prefixed with the stage's name. Only an `output` stage makes
the run deliver its text.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from services.runner.context import RunContext
from services.runner.drivers.base import AgentDriver, Outcome
from services.runner.drivers.templating import TemplateFailed, render_text
from services.runner.errors import StepFailed
from services.runner.steps.results import truncate
from shared.clock import now_iso
from shared.contracts.agent import Agent
from shared.contracts.pipeline import (
    AgentStage,
    FilterStage,
    OutputStage,
    Pipeline,
    PostprocessStage,
    PreprocessStage,
    UnknownStageType,
    stage_config,
)
from shared.contracts.task import TaskStep

FindAgent = Callable[[str], Awaitable[Agent | None]]


def message_text(data: Mapping[str, Any]) -> str:
    """The text of a `message.*` event (`data.text`), or empty: nothing is invented."""
    text = data.get("text")
    return text if isinstance(text, str) else ""


class PipelineDriver:
    def __init__(self, drivers: Mapping[str, AgentDriver], find_agent: FindAgent) -> None:
        self._drivers = drivers
        self._find_agent = find_agent

    async def run(self, ctx: RunContext, pipeline: Pipeline) -> Outcome:
        if not ctx.event.payload.type.startswith("message."):
            raise StepFailed("not_a_message", f"pipeline {pipeline.id} takes message.* events, not "
                             f"{ctx.event.payload.type}")
        text = message_text(ctx.event.payload.data)
        deliver = False
        for stage in pipeline.stages:
            ctx.checkpoint()
            try:
                config = stage_config(stage)
            except UnknownStageType as exc:
                raise StepFailed("unknown_stage", f"pipeline {pipeline.id}: {exc}") from exc
            note: str | None = None
            if isinstance(config, FilterStage):
                passed, note = _filter(config, text)
                if not passed:
                    self._log(ctx, stage.name, stage.type, text, note)
                    return Outcome(answer=None, deliver=False, note=f"stage {stage.name}: {note}")
            elif isinstance(config, PreprocessStage):
                text = _preprocess(config, text, ctx, stage.name)
            elif isinstance(config, AgentStage):
                text = await self._agent(ctx, config, stage.name, text)
            elif isinstance(config, PostprocessStage):
                text = _postprocess(config, text, ctx, stage.name)
            elif isinstance(config, OutputStage):
                deliver = config.deliver
            self._log(ctx, stage.name, stage.type, text, note)
        return Outcome(answer=text or None, deliver=deliver,
                       note=None if deliver else "the pipeline has no output stage that delivers")

    async def _agent(self, ctx: RunContext, config: AgentStage, stage: str, text: str) -> str:
        agent = await self._find_agent(config.agent)
        if agent is None or not agent.enabled:
            raise StepFailed("unknown_agent", f"stage {stage}: agent {config.agent} is missing or disabled")
        ctx.agent, ctx.locale = agent.id, agent.locale
        driver = self._drivers[agent.agent_kind]
        ctx.driven_by(driver.replayable)
        answer = await driver.run(ctx, agent, prefix=f"{stage}.", text=text)
        return answer or ""

    @staticmethod
    def _log(ctx: RunContext, name: str, kind: str, text: str, note: str | None) -> None:
        ctx.handle.stage(TaskStep(id=f"stage.{name}", kind="stage", name=kind, status="finished",
                                  started_at=now_iso(), finished_at=now_iso(), text=truncate(text, 2000), note=note))


def _filter(config: FilterStage, text: str) -> tuple[bool, str | None]:
    if len(text.strip()) < config.min_length:
        return False, f"filtered: the text is shorter than {config.min_length}"
    if config.pattern is not None:
        try:
            found = re.search(config.pattern, text)
        except re.error as exc:
            raise StepFailed("bad_pattern", f"filter pattern {config.pattern!r}: {exc}") from exc
        if found is None:
            return False, f"filtered: the text does not match {config.pattern!r}"
    return True, None


def _preprocess(config: PreprocessStage, text: str, ctx: RunContext, stage: str) -> str:
    if config.strip:
        text = text.strip()
    if config.collapse_whitespace:
        text = " ".join(text.split())
    if config.template is not None:
        text = _render(config.template, text, ctx, stage)
    if config.max_chars is not None:
        text = text[: config.max_chars]
    return text


def _postprocess(config: PostprocessStage, text: str, ctx: RunContext, stage: str) -> str:
    if config.template is not None:
        text = _render(config.template, text, ctx, stage)
    if config.max_chars is not None and len(text) > config.max_chars:
        text = text[: max(config.max_chars - 1, 0)] + "…"
    return text


def _render(template: str, text: str, ctx: RunContext, stage: str) -> str:
    try:
        return render_text(template, {"text": text, "event": ctx.event_view(), "run": ctx.run_view()},
                           where=f"stage {stage} template")
    except TemplateFailed as exc:
        raise StepFailed("template_error", str(exc)) from exc
