"""The playbook driver: declarative steps, no model — deterministic work and the demo's default.

Steps run in order. A step whose `when` is false is skipped (and says so in the log); its
arguments are rendered from `event`, `run`, `text` (a pipeline's message text) and `steps` (the
results so far); a failing step stops the run unless it says `on_error: continue` (then the task
ends `partial`). A `check` step (`drivers.checks`) compares results so far and stops the run when
they disagree. Resuming a task replays the recorded steps instead of calling them again.
"""

from __future__ import annotations

from typing import Any

from services.runner.context import RunContext
from services.runner.drivers.base import GOOD, describe_failure, settle
from services.runner.drivers.checks import CHECK, check_step
from services.runner.drivers.templating import TemplateFailed, render_text, render_value, truthy
from services.runner.errors import AwaitRetry, StepFailed
from services.runner.steps.results import step_view
from services.runner.steps.tool_steps import ToolSteps, Verify
from services.runner.tasks.interactions import EXECUTABLE_ACTION, Announcer, ask
from shared.clock import now_iso
from shared.contracts.agent import Agent, PlaybookStep
from shared.contracts.task import StepKind, TaskStep

READ_TIMEOUT_TRIES = 3  # a read that timed out is read again, durably, this many times in all

_LOGGED_KIND: dict[str, StepKind] = {"tool": "tool", "interaction": "interaction", "check": "verify"}


class PlaybookDriver:
    # Its path is the event, the templates and the recorded step outcomes: nothing unrecorded.
    replayable = True

    def __init__(self, steps: ToolSteps, announcer: Announcer | None = None) -> None:
        self._steps = steps
        self._announcer = announcer

    async def run(self, ctx: RunContext, agent: Agent, *, prefix: str = "", text: str | None = None) -> str | None:
        playbook = agent.playbook
        if playbook is None:
            raise StepFailed("no_playbook", f"agent {agent.id} is a playbook agent without a playbook")
        views: dict[str, Any] = {}
        context: dict[str, Any] = {"event": ctx.event_view(), "run": ctx.run_view(), "text": text, "steps": views}
        for step in playbook.steps:
            ctx.checkpoint()
            step_id = prefix + step.id
            prior = ctx.handle.step(step_id)
            if prior is not None and prior.status == "skipped":
                views[step.id] = step_view(prior)
                continue
            if prior is None and step.when is not None and not _check(step, context):
                skipped = TaskStep(id=step_id, kind=_LOGGED_KIND[step.kind],
                                   name=step.tool or (CHECK if step.kind == "check" else EXECUTABLE_ACTION),
                                   status="skipped", started_at=now_iso(),
                                   note=f"when {step.when!r} was false")
                ctx.handle.stage(skipped)
                views[step.id] = step_view(skipped)
                continue
            if step.kind == "check":
                checked = check_step(step, step_id, context)
                ctx.handle.stage(checked)
                views[step.id] = step_view(checked)
                if checked.classification in GOOD:
                    continue
                if step.on_error == "continue":
                    ctx.partial.append(describe_failure(checked))
                    continue
                raise StepFailed("check_failed", describe_failure(checked))
            if step.kind == "interaction":
                answered = await self._interaction(ctx, step, step_id, context)
                views[step.id] = step_view(answered)
                if answered.classification in GOOD or step.on_error == "continue":
                    if answered.classification not in GOOD:
                        ctx.partial.append(describe_failure(answered))
                    continue
                raise StepFailed(f"step_{answered.classification}", describe_failure(answered))
            assert step.tool is not None
            arguments = prior.arguments if prior is not None and prior.arguments is not None else \
                _render(step.arguments, context, f"step {step.id} arguments")
            result = await self._steps.run(ctx, step_id=step_id, tool=step.tool, arguments=arguments or {},
                                           timeout=step.timeout_seconds,
                                           verify=self._verify(ctx, step, step_id, context))
            views[step.id] = step_view(result)
            settle(result)
            if result.classification in GOOD:
                continue
            if step.on_error == "continue":
                ctx.partial.append(describe_failure(result))
                continue
            failure = StepFailed(f"step_{result.classification}", describe_failure(result))
            if result.classification == "timeout" and result.side_effect == "read":
                # A read changes nothing, so asking again is safe, and its answer may have been
                # lost on the way (a NATS restart while the app answered): the task waits and
                # reads again, up to READ_TIMEOUT_TRIES; a tool that is simply too slow still fails.
                raise AwaitRetry(step_id, "timeout", str(failure), max_tries=READ_TIMEOUT_TRIES, exhausted=failure)
            raise failure
        if playbook.answer is None:
            return None
        try:
            return render_text(playbook.answer, context, where="answer")
        except TemplateFailed as exc:
            raise StepFailed("template_error", str(exc)) from exc

    async def _interaction(self, ctx: RunContext, step: PlaybookStep, step_id: str,
                           context: dict[str, Any]) -> TaskStep:
        prior = ctx.handle.step(step_id)
        if prior is not None:
            return await ask(ctx, self._steps, self._announcer, step_id=step_id, question="", options=[])
        assert step.question is not None
        try:
            question = render_text(step.question, context, where=f"step {step.id} question")
            options = render_value(step.options, context, where=f"step {step.id} options") \
                if step.options is not None else []
        except TemplateFailed as exc:
            raise StepFailed("template_error", str(exc)) from exc
        if not isinstance(options, list):
            raise StepFailed("template_error", f"step {step.id} options: not a list but {type(options).__name__}")
        return await ask(ctx, self._steps, self._announcer, step_id=step_id, question=question, options=options)

    def _verify(self, ctx: RunContext, step: PlaybookStep, step_id: str, context: dict[str, Any]) -> Verify | None:
        check = step.verify
        if check is None:
            return None

        async def read_back() -> bool | None:
            arguments = _render(check.arguments, context, f"step {step.id} verify arguments")
            read = await self._steps.run(ctx, step_id=f"{step_id}.verify{ctx.attempt}", tool=check.tool,
                                         arguments=arguments, kind="verify", side_effect="read")
            settle(read)  # unavailable: the read-back did not run; wait and ask it again, not unverified
            if read.classification != "ok":
                return None
            try:
                return truthy(check.expect, {**context, "result": step_view(read)}, where=f"step {step.id} verify")
            except TemplateFailed as exc:
                raise StepFailed("template_error", str(exc)) from exc

        return read_back


def _check(step: PlaybookStep, context: dict[str, Any]) -> bool:
    assert step.when is not None
    try:
        return truthy(step.when, context, where=f"step {step.id} when")
    except TemplateFailed as exc:
        raise StepFailed("template_error", str(exc)) from exc


def _render(arguments: dict[str, Any], context: dict[str, Any], where: str) -> dict[str, Any]:
    try:
        rendered = render_value(arguments, context, where=where)
    except TemplateFailed as exc:
        raise StepFailed("template_error", str(exc)) from exc
    assert isinstance(rendered, dict)
    return rendered
