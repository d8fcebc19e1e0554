# Over 300 lines: one task's whole life (attempt, wait, deliver, notify, settle) over one store, read in order.
"""One run, start to end: open (or resume) its task, drive the target, deliver, settle the state.

`handle_run` is what the worker calls for each run message and answers what to do with the message: `ack` (the
task state is the truth now — finished, or waiting for an approval), `nak` (handed back: another runner
continues), `retry` (try again later), `drop` (another runner holds the task), or `RetryLater(delay)`: a call did
not run because its target is unavailable, the task is parked `queued` with its `RetryWait`, and the message comes
back after `delay` to resume it from its step log (`steps/retry.py` says when the waiting stops). `resume`
continues a stored task without a run message: where a granted approval picks a waiting task up again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import msgspec

from services.runner.catalog import AgentCatalog
from services.runner.config import RunnerConfig
from services.runner.context import RunContext
from services.runner.drivers.base import GOOD, AgentDriver, Outcome, settle
from services.runner.drivers.pipeline import PipelineDriver
from services.runner.errors import (
    AwaitApproval,
    AwaitInteraction,
    AwaitRetry,
    CancelRequested,
    HandBack,
    LostOwnership,
    RunnerError,
    StepFailed,
    TaskExists,
    Unverified,
)
from services.runner.event_source import EventSource
from services.runner.steps import retry
from services.runner.steps.tool_steps import ToolSteps
from services.runner.tasks import notices, statemachine
from services.runner.tasks.store import TaskHandle, TaskStore
from services.runner.tasks.watch import watch_later
from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import RunPayload, decode_run
from shared.contracts.task import Task, TaskError, TaskState
from shared.errors import AuroraError
from shared.jetstream.run_events import RunEventError
from shared.observability.logs import get_logger

log = get_logger("aurora.runner")
Verdict = Literal["ack", "nak", "retry", "drop", "term"]


@dataclass(frozen=True)
class RetryLater:
    """Settle the run message by a nak with this delay: the task waits to try a call again."""

    delay: float


Decision = Verdict | RetryLater
EVENT_REPLY = "event_reply"
SYNTHETIC_NOTE = "synthetic: no side effect reached an app; the steps record what would have been done"


class InvalidRun(AuroraError):
    """A run message that cannot be read: dead-lettered with the reason."""


class TaskExecutor:
    def __init__(self, store: TaskStore, catalog: AgentCatalog, drivers: Mapping[str, AgentDriver],
                 steps: ToolSteps, events: EventSource, config: RunnerConfig) -> None:
        self._store = store
        self._catalog = catalog
        self._drivers = drivers
        self._pipeline = PipelineDriver(drivers, catalog.agent)
        self._steps = steps
        self._events = events
        self._config = config

    # -- entry points ---------------------------------------------------------------------------
    async def handle_run(self, data: bytes, *, deliveries: int, stopping: asyncio.Event) -> Decision:
        try:
            run = decode_run(data).payload
        except msgspec.DecodeError as exc:  # ValidationError too, and nesting too deep
            raise InvalidRun(f"not a run envelope: {exc}") from exc
        # A run whose task is stored (delivered again, replayed) goes on from it, never over it: its
        # steps may hold a write made again under another call id, which a first call's id would
        # not find in the gateway's ledger. A new run's task is written at its first durable change.
        found = await self._store.get(run.run_id)
        if found is None:
            try:
                event = await self._events.read(run)
            except RunEventError as exc:
                if deliveries < 3:
                    log.warning("run event unreadable; retrying", run=run.run_id, error=str(exc))
                    return "retry"
                return await self._fail_unreadable(run, str(exc))
            task = statemachine.new_task(run, event, runner=self._config.instance, now=self._store.clock(),
                                         deliveries=deliveries)
            try:  # stored at its first durable change (tasks/store.py): a run that ends at once is one revision
                return await self._execute(self._store.unstored(task), event, stopping)
            except TaskExists:
                found = await self._store.get(run.run_id)
            if found is None:
                return "retry"
        # A run delivered again means its runner stopped acking it: a task still `running` is taken over.
        return await self.resume(*found, stopping=stopping, take_over=deliveries > 1)

    async def resume_task(self, task_id: str, *, approvals: Mapping[str, str] | None = None,
                          stopping: asyncio.Event | None = None, take_over: bool = False) -> Decision | None:
        """Resume a stored task by id, no run message needed (None: no such task). For a task
        awaiting approval, `approvals` maps the waiting step (`recovery.waiting_for_approval`)
        to the granted approval's id; that step's tool is called again with it, and no step
        that finished is run again. Whoever calls this must make the call durable (e.g. from
        a consumer that acks only after it returns): unlike a run, nothing redelivers it.
        A task another runner is running is left to it ("drop") unless `take_over` says that
        runner stopped (the message that resumed it came again)."""
        found = await self._store.get(task_id)
        if found is None:
            return None
        return await self.resume(*found, stopping=stopping or asyncio.Event(), approvals=approvals,
                                 take_over=take_over)

    async def resume(self, task: Task, revision: int, *, stopping: asyncio.Event,
                     approvals: Mapping[str, str] | None = None, take_over: bool = False) -> Decision:
        """Continue a stored task from its step log (completed steps are not run again)."""
        if task.terminal or (task.state == "awaiting_approval" and not approvals):
            return "ack"
        if task.state == "running" and not take_over:
            return "drop"  # its runner is alive as far as anyone knows: taking over would race it
        handle = self._store.handle(task, revision)
        now = self._store.clock()
        try:
            # Its runner stopped before settling it: the user hears how it ended now (a notice
            # that runner began is asked for again under its call id, not sent twice).
            if task.cancel_requested is not None:
                told = await self._tell(handle, lambda locale: notices.cancelled_notice(locale=locale))
                await handle.update(lambda t: statemachine.transition(
                    t, "cancelled", by=self._config.instance, now=now, reason=f"cancelled by {t.cancel_requested}",
                    delivered=told))
                return "ack"
            if retry.failed_attempts(task) >= self._config.max_attempts:
                told = await self._tell(handle, lambda locale: notices.partial_notice(handle.steps(), locale=locale)
                                        if _wrote(handle) else notices.failed_notice(locale=locale))
                await handle.update(lambda t: statemachine.transition(
                    t, "failed", by=self._config.instance, now=now, delivered=told,
                    reason=f"gave up after {t.attempts} attempts",
                    error=TaskError(code="too_many_attempts", message=f"the run was tried {t.attempts} times")))
                return "ack"
            await handle.update(lambda t: statemachine.claim(t, runner=self._config.instance, now=now))
        except LostOwnership:
            return "drop"
        try:
            event = await self._events.read_for(handle.task)
        except RunEventError as exc:
            try:
                await self._finish(handle, "failed", reason="the event cannot be read",
                                   error=TaskError(code="event_unreadable", message=str(exc)))
            except LostOwnership:
                return "drop"
            return "ack"
        return await self._execute(handle, event, stopping, approvals=approvals)

    # -- one attempt ----------------------------------------------------------------------------
    async def _execute(self, handle: TaskHandle, event: EventEnvelope, stopping: asyncio.Event,
                       approvals: Mapping[str, str] | None = None) -> Decision:
        watch = watch_later(handle, heartbeat=self._config.heartbeat)
        try:
            return await self._attempt(handle, event, stopping, approvals)
        except TaskExists:
            raise  # handle_run goes on from the task as stored
        except LostOwnership as exc:  # also while settling: the other runner's attempt is the one
            log.info("task taken over by another runner", task=handle.task.id, detail=str(exc))
            return "drop"
        finally:
            watch.cancel()

    async def _attempt(self, handle: TaskHandle, event: EventEnvelope, stopping: asyncio.Event,
                       approvals: Mapping[str, str] | None) -> Decision:
        task = handle.task
        ctx = RunContext(handle=handle, event=event, delivery=task.delivery, synthetic=task.synthetic,
                         runner=self._config.instance, stopping=stopping,
                         deadline=time.monotonic() + self._config.run_timeout, approvals=dict(approvals or {}),
                         agent=task.agent)
        try:
            outcome, failure = await self._drive_or_notice(ctx)
            delivered, problem = await self._deliver(ctx, outcome)
            if failure is not None:  # it failed, and the user was told so where it could be
                told = "; the user was told" if delivered else ""
                await self._finish(handle, "partial" if _wrote(handle) else "failed", reason=f"{failure}{told}",
                                   agent=ctx.agent, delivered=delivered,
                                   error=TaskError(code=failure.code, message=str(failure)))
                return "ack"
            state: TaskState = "partial" if ctx.partial or problem else "succeeded"
            reasons = [*ctx.partial, *([problem] if problem else []), *([outcome.note] if outcome.note else [])]
            if ctx.synthetic:
                reasons.append(SYNTHETIC_NOTE)
            await self._finish(handle, state, reason="; ".join(reasons) or None, answer=outcome.answer,
                               delivered=delivered, agent=ctx.agent)
            return "ack"
        except AwaitApproval as wait:
            await self._finish(handle, "awaiting_approval", reason=str(wait), approval_id=wait.approval_id,
                               agent=ctx.agent)
            return "ack"
        except AwaitInteraction as wait:
            await self._finish(handle, "awaiting_approval", reason=str(wait), interaction_id=wait.interaction_id,
                               agent=ctx.agent)
            return "ack"
        except AwaitRetry as wait:
            return await self._wait(handle, ctx, wait)
        except Unverified as exc:
            doubtful = notices.in_doubt(handle.steps())
            informed = False if doubtful is not None and doubtful.kind == "delivery" else \
                await self._notify(ctx, notices.unverified_notice(handle.steps(), locale=ctx.locale))
            await self._finish(handle, "unverified", reason="a write's outcome is unknown", check=exc.check,
                               agent=ctx.agent, delivered=informed,
                               error=TaskError(code="outcome_unknown", message=exc.check))
            return "ack"
        except CancelRequested as exc:
            informed = await self._notify(ctx, notices.cancelled_notice(locale=ctx.locale))
            await self._finish(handle, "cancelled", reason=str(exc), agent=ctx.agent, delivered=informed)
            return "ack"
        except HandBack:
            await self._finish(handle, "queued", reason="handed back: the runner is stopping")
            return "nak"
        except StepFailed as exc:
            await self._stopped(handle, ctx, str(exc), TaskError(code=exc.code, message=str(exc)))
            return "ack"

    async def _wait(self, handle: TaskHandle, ctx: RunContext, wait: AwaitRetry) -> Decision:
        """Park the task until its next try, or — its deadline passed — end it with the reason."""
        planned = retry.plan(handle.task, step=wait.step_id, code=wait.code, message=wait.detail,
                             now=datetime.now(UTC), limit_seconds=await self._retry_limit(ctx),
                             expire_at=ctx.event.payload.expire_at, backoff=self._config.retry_backoff,
                             retry_after=wait.retry_after)
        if wait.max_tries is not None and planned.tries >= wait.max_tries and wait.exhausted is not None:
            failed = wait.exhausted
            await self._stopped(handle, ctx, f"{failed} (tried {planned.tries} times)",
                                TaskError(code=failed.code, message=str(failed)))
            return "ack"
        if planned.wait is None:
            reason = retry.gave_up(wait.step_id, wait.code, wait.detail, planned.tries, planned.since)
            await self._stopped(handle, ctx, reason, TaskError(code=wait.code, message=reason))
            return "ack"
        await self._finish(handle, "queued", reason=retry.waiting_reason(planned.wait), retry=planned.wait,
                           agent=ctx.agent)
        return RetryLater(planned.delay)

    async def _retry_limit(self, ctx: RunContext) -> float:
        """How long this run may wait for an unavailable target: its agent's setting (for a
        pipeline, its AI stage's agent), else the runner's default."""
        target = ctx.handle.task.target
        agent_id = ctx.agent or (target.id if target.type == "agent" else None)
        agent = await self._catalog.agent(agent_id) if agent_id else None
        return agent.retry_unavailable_seconds if agent is not None else self._config.retry_unavailable

    async def _drive_or_notice(self, ctx: RunContext) -> tuple[Outcome, StepFailed | None]:
        """The run's outcome; for a failure the user must hear of (`notice`), that notice as the
        answer to deliver, with the failure to settle the task by."""
        try:
            return await self._drive(ctx), None
        except StepFailed as exc:
            if exc.notice is None:
                raise
            return Outcome(answer=exc.notice), exc

    async def _drive(self, ctx: RunContext) -> Outcome:
        target = ctx.handle.task.target
        ctx.replayable = True  # so far only the event: it stays so unless a model drives a part
        if target.type == "pipeline":
            pipeline = await self._catalog.pipeline(target.id)
            if pipeline is None or not pipeline.enabled:
                raise StepFailed("unknown_pipeline", f"pipeline {target.id} is missing or disabled")
            return await self._pipeline.run(ctx, pipeline)
        agent = await self._catalog.agent(target.id)
        if agent is None or not agent.enabled:
            raise StepFailed("unknown_agent", f"agent {target.id} is missing or disabled")
        ctx.agent, ctx.locale = agent.id, agent.locale
        ctx.driven_by(self._drivers[agent.agent_kind].replayable)
        return Outcome(answer=await self._drivers[agent.agent_kind].run(ctx, agent))

    async def _deliver(self, ctx: RunContext, outcome: Outcome, *, notice: bool = False) -> tuple[bool, str | None]:
        """(delivered, problem). No reply target, no delivery — never a guess. A `notice` of how
        the task ended goes out even when the agent replied itself, and even once the run is
        stopping, cancelled or out of time: it is that ending the user must hear of."""
        answer = outcome.answer
        if not outcome.deliver or answer is None or not answer.strip():
            return False, None
        target = ctx.delivery.reply_target
        if target is None or not (target.session_id or target.conversation):
            return False, None  # a friend request's target, say: nowhere to reply in
        if not notice:
            if any(s.kind == "tool" and s.name == EVENT_REPLY and s.classification == "ok" for s in ctx.handle.steps()):
                return True, None  # the agent replied itself with event_reply: no second reply
            ctx.checkpoint()
        step = await self._steps.run(ctx, step_id="deliver", tool=EVENT_REPLY, arguments={"text": answer},
                                     kind="delivery", side_effect="write")
        settle(step)
        if step.classification == "ok":
            return True, None
        if step.classification in GOOD:  # suppressed: a synthetic run records what it would have sent
            return False, None
        error = f": {step.error.code}: {step.error.message}" if step.error else ""
        return False, f"the answer was not delivered ({step.classification}{error})"

    async def _stopped(self, handle: TaskHandle, ctx: RunContext, reason: str, error: TaskError) -> None:
        """The run stopped on `reason`: `failed`, or `partial` when it had changed something —
        then the user hears what is done and what is not (a partial change must not pass for
        all or nothing); a failure that changed nothing is said as such."""
        wrote = _wrote(handle)
        notice = notices.partial_notice(handle.steps(), locale=ctx.locale) if wrote \
            else notices.failed_notice(locale=ctx.locale)
        informed = await self._notify(ctx, notice)
        await self._finish(handle, "partial" if wrote else "failed", reason=reason, agent=ctx.agent,
                           delivered=informed, error=error)

    async def _notify(self, ctx: RunContext, notice: str) -> bool:
        """Deliver a notice of how the task ended, if it can be (True: delivered). Best effort: a
        notice that cannot go out now changes nothing of the state the task is settling in."""
        try:
            delivered, problem = await self._deliver(ctx, Outcome(answer=notice), notice=True)
        except LostOwnership:
            raise
        except RunnerError as exc:  # stopping, cancelled, the app unavailable …: settle without it
            log.warning("notice not delivered", task=ctx.task_id, error=str(exc))
            return False
        if problem:
            log.warning("notice not delivered", task=ctx.task_id, error=problem)
        return delivered

    async def settle_waiting(self, task_id: str, still_waits: Callable[[Task], bool], *, by: str, reason: str,
                             error: TaskError, notice: Callable[[str | None], str]) -> bool:
        """Cancel a task parked `awaiting_approval` without resuming it (its approval was denied
        or expired), telling the user first (True: this call cancelled it). The notice is the
        task's `deliver` step, recorded `started` before it is sent, and the task moves only
        after: a runner dying in between leaves the task waiting, the decision's event comes
        again, and the notice is asked for again under the same call id — the gateway's call
        ledger answers with the reply it sent instead of sending a second one. Whoever moved the
        task first (an operator's cancel, another delivery of the event) makes this a no-op."""
        found = await self._store.get(task_id)
        if found is None or found[0].state != "awaiting_approval" or not still_waits(found[0]):
            return False
        handle = self._store.handle(*found)
        try:
            informed = await self._tell(handle, notice)
        except LostOwnership:
            return False

        def cancel(current: Task) -> Task:
            if current.state != "awaiting_approval" or not still_waits(current):
                raise LostOwnership(f"task {task_id} moved on while its approval was refused")
            return statemachine.transition(current, "cancelled", by=by, now=self._store.clock(), reason=reason,
                                           error=error, delivered=informed)

        try:
            await handle.update(cancel)
        except LostOwnership:
            return False
        return True

    async def _tell(self, handle: TaskHandle, notice: Callable[[str | None], str]) -> bool:
        """Tell the user of a task no attempt is driving how it ended, in its agent's language."""
        task = handle.task
        try:
            event = await self._events.read_for(task)
        except RunEventError as exc:  # no event, no conversation to tell: it ends all the same
            log.warning("notice not delivered: the event cannot be read", task=task.id, error=str(exc))
            return False
        agent = await self._catalog.agent(task.agent) if task.agent else None
        ctx = RunContext(handle=handle, event=event, delivery=task.delivery, synthetic=task.synthetic,
                         runner=self._config.instance, stopping=asyncio.Event(), deadline=time.monotonic(),
                         agent=task.agent, locale=agent.locale if agent is not None else None)
        return await self._notify(ctx, notice(ctx.locale))

    async def _finish(self, handle: TaskHandle, state: TaskState, *, reason: str | None, **changes: object) -> None:
        now = self._store.clock()
        instance = self._config.instance
        await handle.update(lambda t: statemachine.transition(t, state, by=instance, now=now, reason=reason,
                                                              **changes))
        log.info("task settled", task=handle.task.id, state=state, attempts=handle.task.attempts)

    async def _fail_unreadable(self, run: RunPayload[EventEnvelope], problem: str) -> Decision:
        task = statemachine.new_task(run, None, runner=self._config.instance, now=self._store.clock())
        revision = await self._store.create(task)
        if revision is not None:  # else another runner made it first, and settles it
            await self._finish(self._store.handle(task, revision), "failed", reason="the event cannot be read",
                               error=TaskError(code="event_unreadable", message=problem))
        return "ack"


def _wrote(handle: TaskHandle) -> bool:
    """Did the run change anything outside before it failed? Then it is partial, not failed."""
    return any(step.kind == "tool" and step.side_effect != "read" and step.classification == "ok"
               for step in handle.steps())
