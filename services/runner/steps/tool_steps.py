"""Tool steps: call a tool through the gateway and keep the step log honest about it.

A read is recorded when it finishes (losing it in a crash only means reading again). A write —
anything not declared read-only, deliveries included — is recorded `started` (with its call id)
durably before the call, so a resumed task knows which writes may have happened; its `finished`
outcome is written at once in an llm run, with the task's next change in a replayable one
(`RunContext.replayable`). For such a step found `started`, see `recovery`.

The log keeps a call's arguments redacted, the full ones sealed beside them (`secrets`); a call
made again (an approval came) with the logged arguments is made with the sealed ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from services.runner.context import RunContext
from services.runner.errors import StepFailed, Unverified
from services.runner.steps.results import bounded, business_ids, error_of, text_of, truncate
from services.runner.steps.secrets import SealBroken, StepSecrets
from services.runner.tasks import recovery
from services.runner.tasks.call_audit import AuditLookup
from services.runner.tools.client import REPLY_MARGIN, ToolClient, call_id_for
from shared.clock import now_iso
from shared.contracts.task import TaskStep
from shared.contracts.toolcall import ToolActor, ToolCallContext, ToolCallRequest, ToolCallResult
from shared.observability.logs import get_logger

log = get_logger("aurora.runner.steps")
# A read-back: True (the write is there), False (it is not), None (cannot tell).
Verify = Callable[[], Awaitable[bool | None]]
Kind = Literal["tool", "delivery", "verify"]


class ToolSteps:
    def __init__(self, tools: ToolClient, audit: AuditLookup, side_effect_of: Callable[[str], str], *,
                 default_timeout: float, result_limit: int, secrets: StepSecrets | None = None) -> None:
        self._tools = tools
        self.secrets = secrets
        self._audit = audit
        self._side_effect_of = side_effect_of
        self._timeout = default_timeout
        self._limit = result_limit

    async def run(self, ctx: RunContext, *, step_id: str, tool: str, arguments: dict[str, Any],
                  kind: Kind = "tool", side_effect: str | None = None, timeout: float | None = None,
                  verify: Verify | None = None) -> TaskStep:
        """The step's outcome: recorded before (reused), recovered, or from calling the tool now."""
        prior = ctx.handle.step(step_id)
        note: str | None = None
        action = recovery.action_for(prior)
        if prior is not None and prior.classification == "needs_approval" and step_id in ctx.approvals:
            action = "run"  # an approval arrived for this step: call again, with it
        if prior is not None and prior.done and prior.classification == "unavailable":
            action = "run"  # nothing ran (the target was not there): the task waited to try again
        waited = ctx.handle.task.retry
        if prior is not None and prior.done and prior.classification == "timeout" and prior.side_effect == "read" \
                and waited is not None and waited.step == step_id:
            action = "run"  # a read whose answer did not come: the task waited to read again
        if action == "reuse":
            assert prior is not None
            return prior
        if action == "look_up":
            assert prior is not None
            recovered = await self._recover(ctx, prior, verify)
            if recovered is not None:
                await ctx.handle.record(recovered)
                return recovered
            note = "the read-back found no trace of the first call, so it was made again"
        effect = side_effect or self._side_effect_of(tool)
        limit = timeout or self._timeout
        arguments = self._full(prior, arguments)
        kept, sealed = self.secrets.keep(tool, arguments) if self.secrets is not None else (arguments, None)
        started = TaskStep(
            id=step_id, kind=kind, name=tool, status="started", started_at=now_iso(), side_effect=effect,
            arguments=kept, sealed_arguments=sealed, call_id=call_id_for(ctx.task_id, step_id, ctx.attempt),
            approval_id=ctx.approvals.get(step_id) or _granted_before(prior), note=note, timeout_seconds=limit,
        )
        if effect != "read":
            await ctx.handle.record(started)
        call = self._tools.call(self._request(ctx, started, arguments, limit), call_id=started.call_id or "",
                                timeout=limit, side_effect=effect, trace=ctx.event.header.trace)
        result = await (ctx.interruptible(call) if effect == "read" else call)
        finished = self._finished(started, result)
        for step in progress_steps(finished, result):  # the app's progress notes, written with the call
            ctx.handle.stage(step)
        if effect != "read" and not ctx.replayable:
            # An llm run records a write's outcome at once: a model chose its path, and a resumed
            # run is replayed from the step log only as far as the log goes (staging it for every
            # run was tried and taken back: docs/benchmarks.md "Fewer stored messages per event").
            await ctx.handle.record(finished)
        else:
            # A read, or a write in a run whose path is fixed by its event and recorded outcomes (a
            # playbook, a pipeline's text stages: RunContext.replayable): written with the task's
            # next durable change, one task revision less per write. The `started` record above
            # stays the claim; a runner dying before that change leaves the step `started`, and
            # the next attempt looks it up (`look_up`: the gateway's ledger answers the result it
            # recorded under the call id, nothing is sent again) and takes the same path on.
            ctx.handle.stage(finished)
        return finished

    def _full(self, prior: TaskStep | None, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments to call with: the sealed ones when these are the logged, redacted ones."""
        if prior is None or prior.sealed_arguments is None or arguments != prior.arguments:
            return arguments
        if self.secrets is None:
            raise StepFailed("secrets_sealed", f"step {prior.id}'s arguments are sealed and this runner has no key")
        try:
            return self.secrets.opened(prior.sealed_arguments)
        except SealBroken as exc:
            raise StepFailed("secrets_sealed", f"step {prior.id}: {exc}") from exc

    def _request(self, ctx: RunContext, step: TaskStep, arguments: dict[str, Any],
                 timeout: float) -> ToolCallRequest:
        payload = ctx.event.payload
        actor = ToolActor(id=payload.actor.id, kind=payload.actor.kind) if payload.actor else None
        return ToolCallRequest(
            tool=step.name,
            arguments=arguments,
            context=ToolCallContext(
                agent=ctx.agent, run_id=ctx.handle.task.run_id, task_id=ctx.task_id, step_id=step.id,
                session_id=payload.session_id, actor=actor, approval_id=step.approval_id,
                idempotency_key=f"{ctx.task_id}:{step.id}", synthetic=ctx.synthetic,
                delivery=ctx.delivery_wire(),
            ),
            timeout_seconds=timeout,
        )

    def _finished(self, started: TaskStep, result: ToolCallResult) -> TaskStep:
        structured = bounded(result.structured, self._limit)
        # The text usually repeats the structured result: keep a short one when that is kept.
        text_limit = self._limit if structured is None else min(self._limit, 1000)
        return msgspec.structs.replace(
            started, status="finished", finished_at=now_iso(), classification=result.status,
            side_effect=result.side_effect or started.side_effect,
            business_ids=business_ids(result.structured) if result.structured is not None else {},
            structured=structured, text=truncate(text_of(result), text_limit) or None,
            error=error_of(result), approval_id=result.approval_id or started.approval_id,
        )

    async def _recover(self, ctx: RunContext, step: TaskStep, verify: Verify | None) -> TaskStep | None:
        """A write found `started`: its outcome from the gateway's call ledger (asked again under
        the same call id), the audit or a read-back; None when the read-back shows it did not
        happen; Unverified when nobody can tell."""
        await _after_call_window(step, step.timeout_seconds or self._timeout)
        asked, doubt = await self._ask_again(ctx, step)
        if asked is not None:
            log.info("write outcome recovered from the gateway", task=ctx.task_id, step=step.id,
                     status=asked.classification)
            return asked
        record = await self._audit.find(step.call_id, since=step.started_at) if step.call_id else None
        if record is not None:
            log.info("write outcome recovered from the audit", task=ctx.task_id, step=step.id, status=record.status)
            return recovery.from_audit(step, record)
        if verify is not None:
            found = await verify()
            if found is True:
                return msgspec.structs.replace(
                    step, status="finished", finished_at=now_iso(), classification="ok",
                    note="outcome not recorded before a crash; the read-back shows the write happened")
            if found is False:
                return None
        raise Unverified(recovery.unverified_check(step, reason=doubt or recovery.LOST))

    async def _ask_again(self, ctx: RunContext, step: TaskStep) -> tuple[TaskStep | None, str | None]:
        """The step finished with what the gateway answers to its call id asked again (the
        recorded result, or the call run now if the gateway never received it), or why not."""
        if not step.call_id:
            return None, None
        limit = step.timeout_seconds or self._timeout
        arguments = self._full(step, step.arguments or {})
        result = await self._tools.call(self._request(ctx, step, arguments, limit), call_id=step.call_id,
                                        timeout=limit, side_effect=step.side_effect, trace=ctx.event.header.trace)
        if recovery.unanswered(result):
            return None, recovery.doubt_of(result)
        finished = self._finished(step, result)
        return msgspec.structs.replace(finished, note=recovery.ASKED_AGAIN.format(call_id=step.call_id)), None


def progress_steps(call: TaskStep, result: ToolCallResult) -> list[TaskStep]:
    """One finished `progress` step per progress note the app sent during the call."""
    steps = []
    for n, note in enumerate(result.progress, 1):
        done = f"{note.progress:g}" + (f"/{note.total:g}" if note.total is not None else "") \
            if note.progress is not None else None
        text = " ".join(part for part in (done, note.message) if part) or "progress"
        steps.append(TaskStep(
            id=f"{call.id}.progress{n}", kind="progress", name=call.name, status="finished", started_at=note.at,
            finished_at=note.at, classification="ok", text=text,
            structured={"progress": note.progress, "total": note.total, "message": note.message},
            note=f"reported by the app during call {call.call_id}" if call.call_id else None,
        ))
    return steps


def _granted_before(prior: TaskStep | None) -> str | None:
    """A call that found its target unavailable is made again with the approval it was made with."""
    return prior.approval_id if prior is not None and prior.classification == "unavailable" else None


async def _after_call_window(step: TaskStep, timeout: float) -> None:
    """Wait until the first call can no longer be running at the gateway, so that neither the
    audit nor a read-back is consulted while it still might be."""
    started = datetime.fromisoformat(step.started_at)
    remaining = timeout + REPLY_MARGIN - (datetime.now(UTC) - started).total_seconds()
    if remaining > 0:
        await asyncio.sleep(remaining)
