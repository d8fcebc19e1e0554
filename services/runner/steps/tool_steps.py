"""Tool steps: call a tool through the gateway and keep the step log honest about it.

A read is recorded when it finishes (losing it in a crash only means reading again). A write —
anything not declared read-only, deliveries included — is claimed before it is sent, so a
resumed task can learn whether it happened:
- in an llm run, and for a call made again after a recorded outcome (an approval arrived, the
  target was unavailable): recorded `started` (with its call id) durably before the call, its
  `finished` outcome written at once (llm) or with the task's next change;
- a first call in a replayable run (`RunContext.replayable`: a playbook, a pipeline's text
  stages) is not recorded `started`: its call id is the same in every attempt
  (`step_call_id`), and the gateway's call ledger, which claims every write before sending it,
  is its claim. Its outcome is written with the task's next change. A resumed attempt takes the
  same path and makes it again under that id: the ledger runs it if it was never sent, answers
  its recorded result if it was, and refuses it (`call_id_reused`) when this attempt's arguments
  differ from the earlier one's — then the task is `unverified`, saying what to check; when the
  gateway cannot tell, it is recovered as a write found `started` is.
For a step found `started`, see `recovery`.

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
from services.runner.tools.client import REPLY_MARGIN, ToolClient, step_call_id
from shared.clock import now_iso
from shared.contracts.task import TaskStep
from shared.contracts.toolcall import ToolActor, ToolCallContext, ToolCallRequest, ToolCallResult
from shared.observability.logs import get_logger

log = get_logger("aurora.runner.steps")
# A read-back: True (the write is there), False (it is not), None (cannot tell).
Verify = Callable[[], Awaitable[bool | None]]
Kind = Literal["tool", "delivery", "verify"]
NO_TRACE = "the read-back found no trace of the first call, so it was made again"


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
            note = NO_TRACE
        return await self._call(ctx, prior, step_id=step_id, tool=tool, arguments=arguments, kind=kind,
                                side_effect=side_effect, timeout=timeout, verify=verify, note=note)

    async def _call(self, ctx: RunContext, prior: TaskStep | None, *, step_id: str, tool: str,
                    arguments: dict[str, Any], kind: Kind, side_effect: str | None, timeout: float | None,
                    verify: Verify | None, note: str | None) -> TaskStep:
        effect = side_effect or self._side_effect_of(tool)
        limit = timeout or self._timeout
        arguments = self._full(prior, arguments)
        kept, sealed = self.secrets.keep(tool, arguments) if self.secrets is not None else (arguments, None)
        call_id = step_call_id(ctx.task_id, step_id, ctx.attempt, first=prior is None, side_effect=effect)
        started = TaskStep(
            id=step_id, kind=kind, name=tool, status="started", started_at=now_iso(), side_effect=effect,
            arguments=kept, sealed_arguments=sealed, call_id=call_id,
            approval_id=ctx.approvals.get(step_id) or _granted_before(prior), note=note, timeout_seconds=limit,
        )
        # A write is claimed in the step log before it is sent — except a first call in a replayable
        # run: its call id is the same in every attempt, so the gateway's call ledger (which claims
        # it before sending) is the claim a resumed attempt asks (`_resumed`). A call made again
        # after a recorded outcome has a new id, and an llm run's path was chosen by a model: both
        # are recorded `started` first, as before.
        claimed = effect != "read" and (not ctx.replayable or prior is not None)
        if claimed:
            await ctx.handle.record(started)
        call = self._tools.call(self._request(ctx, started, arguments, limit), call_id=call_id,
                                timeout=limit, side_effect=effect, trace=ctx.event.header.trace)
        result = await (ctx.interruptible(call) if effect == "read" else call)
        if effect != "read" and not claimed and ctx.attempt > 1 and recovery.not_settled(result):
            # An earlier attempt may have sent it, and the gateway's answer is not its outcome.
            resumed = await self._resumed(ctx, started, result, verify)
            if resumed is None:  # the read-back found no trace of it: a new call, claimed as such
                return await self._call(ctx, started, step_id=step_id, tool=tool, arguments=arguments, kind=kind,
                                        side_effect=effect, timeout=timeout, verify=verify, note=NO_TRACE)
            ctx.handle.stage(resumed)
            return resumed
        finished = self._finished(started, result)
        for step in progress_steps(finished, result):  # the app's progress notes, written with the call
            ctx.handle.stage(step)
        if claimed and not ctx.replayable:
            # An llm run records a write's outcome at once: a model chose its path, and a resumed
            # run is replayed from the step log only as far as the log goes (staging it for every
            # run was tried and taken back: docs/benchmarks.md "Fewer stored messages per event").
            await ctx.handle.record(finished)
        else:
            # A read, or a write in a run whose path is fixed by its event and recorded outcomes (a
            # playbook, a pipeline's text stages: RunContext.replayable): written with the task's
            # next durable change, one task revision less per write (two for a first call, which
            # is not recorded `started` either). A runner dying before that change leaves no
            # outcome; the next attempt takes the same path and makes the write again under the
            # same call id (a first call) or finds it `started` (`look_up`): either way the
            # gateway's ledger answers with what it recorded, and nothing is sent twice.
            ctx.handle.stage(finished)
        return finished

    async def _resumed(self, ctx: RunContext, step: TaskStep, result: ToolCallResult,
                       verify: Verify | None) -> TaskStep | None:
        """A resumed attempt's write the step log has nothing of, made under its first call's id,
        that the gateway did not settle (`recovery.not_settled`): recovered as a write found
        `started` is (None when the read-back shows it did not happen); Unverified when nobody can
        tell, or when an earlier attempt made it with other arguments (the run's reads answered
        otherwise this time)."""
        if result.error is not None and result.error.code == "call_id_reused":
            ctx.handle.stage(msgspec.structs.replace(step, note=recovery.OTHER_ARGUMENTS))
            raise Unverified(recovery.arguments_differ_check(step, result))
        log.info("a resumed attempt's write is in doubt at the gateway", task=ctx.task_id, step=step.id,
                 code=result.error.code if result.error else None)
        since = recovery.earlier_attempts_began(ctx.handle.task, event_at=ctx.event.header.timestamp)
        try:
            return await self._recover(ctx, step, verify, since=since, lost=recovery.EARLIER_ATTEMPT)
        except Unverified:
            ctx.handle.stage(step)  # the write in doubt, in the log the task settles with
            raise

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

    async def _recover(self, ctx: RunContext, step: TaskStep, verify: Verify | None, *, since: str | None = None,
                       lost: str = recovery.LOST) -> TaskStep | None:
        """A write found `started`: its outcome from the gateway's call ledger (asked again under
        the same call id), the audit (from `since`, else the step's start) or a read-back; None
        when the read-back shows it did not happen; Unverified (saying `lost`) when nobody can tell."""
        await _after_call_window(step, step.timeout_seconds or self._timeout)
        asked, doubt = await self._ask_again(ctx, step)
        if asked is not None:
            log.info("write outcome recovered from the gateway", task=ctx.task_id, step=step.id,
                     status=asked.classification)
            return asked
        record = await self._audit.find(step.call_id, since=since or step.started_at) if step.call_id else None
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
        raise Unverified(recovery.unverified_check(step, reason=doubt or lost))

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
