"""Waiting tasks picked up again when what they wait for happens: approvals and answers.

One durable pull consumer (`runner-resume`), shared by every runner process, on the events
stream, filtered to the gateway's `approval.*` events and every app's `interaction.submitted`:

- `approval.granted` → the task waiting for that approval is marked decided (a `queued`
  transition by the person who granted it, saying when) and resumed from its step log, the
  waiting write called again with the approval id;
- `approval.denied` / `approval.expired` → the user who asked is told, in the conversation's
  language, that nothing was done, and the task is `cancelled`, saying by whom and when;
- `interaction.submitted` → the answer becomes the waiting interaction step's result (who
  answered, when), and the task is resumed.

Nothing waits in memory: the task in KV says what it waits for, and the event message is acked
only after the task moved on (a resumed task that must wait for an unavailable target keeps the
event: it is nak'd with the wait's delay and, delivered again, resumes the task again), so a
runner dying half way leaves the message to be delivered again (to any runner), which continues
from the task's state. A second event for the same approval or interaction finds the task no
longer waiting and does nothing (and the gateway refuses a second use of an approval anyway).
A decision or an answer that comes before the task is parked for it (the runner has not stored
the wait yet, or not the task at all) comes back, for a minute, instead of being dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from services.runner.config import RunnerConfig
from services.runner.executor import RetryLater, TaskExecutor
from services.runner.tasks import interactions, statemachine
from services.runner.tasks.approval_decisions import (
    granted_reason,
    granted_step,
    on_grant,
    on_refusal,
    task_may_come,
)
from services.runner.tasks.notices import refused_notice
from services.runner.tasks.store import TaskStore
from shared.contracts.envelope import EventEnvelope
from shared.contracts.signals import GATEWAY_APP, INTERACTION_SUBMITTED
from shared.contracts.subjects import Subjects
from shared.contracts.task import Task, TaskError
from shared.jetstream.consume_loop import ACK, TERM, AtLeastOnceConsumer, Retry
from shared.jetstream.consume_loop import Outcome as Settlement
from shared.lifecycle import Lifecycle
from shared.observability.logs import get_logger

log = get_logger("aurora.runner.resumer")
DURABLE = "runner-resume"
Outcome = Literal["ack", "nak", "term"]
_decoder = msgspec.json.Decoder(EventEnvelope)


def resume_consumer(config: RunnerConfig, subjects: Subjects) -> ConsumerConfig:
    return ConsumerConfig(
        durable_name=DURABLE,
        description="runners: approvals decided and interactions answered, to resume waiting tasks",
        deliver_policy=DeliverPolicy.NEW,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=config.ack_wait,
        max_deliver=-1,
        filter_subjects=[subjects.event(GATEWAY_APP, "approval.>"),
                         f"{subjects.prefix}.evt.*.{INTERACTION_SUBMITTED}"],
    )


class Resumer(Lifecycle[None]):
    def __init__(self, js: JetStreamContext, subjects: Subjects, store: TaskStore, executor: TaskExecutor,
                 config: RunnerConfig, stream: str) -> None:
        super().__init__("the task resumer")
        self._js = js
        self._subjects = subjects
        self._store = store
        self._executor = executor
        self._config = config
        self._stopping = asyncio.Event()
        self._consumer = AtLeastOnceConsumer(js, subjects, stream=stream, config=resume_consumer(config, subjects),
                                             stage="runner", heartbeat=config.heartbeat)

    async def _start(self, parts: AsyncExitStack) -> None:
        parts.push_async_callback(self._consumer.stop)
        await self._consumer.start()

    async def run(self, stop: asyncio.Event) -> None:
        self.require_started()
        await self._consumer.run_each(stop, self._handle, concurrency=self._config.concurrency)
        running = self._consumer.running
        if running:
            self._stopping.set()  # resumed tasks hand back at their next step; the event comes again
            await asyncio.wait(set(running), timeout=self._config.stop_timeout)
            for task in list(running):
                task.cancel()

    async def _handle(self, msg: Msg) -> Settlement:
        outcome = await self.handle(msg.data, redelivered=msg.metadata.num_delivered > 1)
        if isinstance(outcome, RetryLater):
            return Retry("", delay=outcome.delay)
        if outcome == "ack":
            return ACK
        if outcome == "term":
            return TERM
        return Retry("the task cannot take this event yet")

    # -- what each event does --------------------------------------------------------------------
    async def handle(self, data: bytes, *, redelivered: bool = False) -> Outcome | RetryLater:
        try:
            event = _decoder.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            log.warning("unreadable event ignored", error=str(exc))
            return "term"
        payload = event.payload
        body: dict[str, Any] = payload.data if isinstance(payload.data, dict) else {}
        if payload.type == INTERACTION_SUBMITTED:
            return await self._answered(event, body, redelivered)
        if event.header.source.app != GATEWAY_APP:
            return "ack"  # only the gateway decides approvals
        verb = payload.type.removeprefix("approval.")
        if verb == "granted":
            return await self._granted(body, redelivered)
        if verb in ("denied", "expired"):
            return await self._refused(body, verb)
        return "ack"  # approval.requested: nothing to do

    async def _decided_task(self, approval: dict[str, Any]) -> tuple[str, Task] | Outcome:
        """The approval's id and the task it was asked for; else what becomes of the decision:
        it comes back while the task may still be stored (`task_may_come`), else it is dropped."""
        approval_id, task_id = approval.get("id"), approval.get("task_id")
        if not isinstance(approval_id, str) or not isinstance(task_id, str):
            return "ack"
        found = await self._store.get(task_id)
        if found is None:
            return "nak" if task_may_come(approval, now=datetime.now(UTC)) else "ack"
        return approval_id, found[0]

    async def _granted(self, approval: dict[str, Any], redelivered: bool) -> Outcome | RetryLater:
        decided = await self._decided_task(approval)
        if not isinstance(decided, tuple):
            return decided
        approval_id, task = decided
        task_id = task.id
        action = on_grant(task, approval_id, redelivered=redelivered)
        if action == "wait":
            return "nak"  # the decision beat the runner parking the task for it: come back then
        if action == "ignore":
            return "ack"
        step = granted_step(task, approval_id)
        assert step is not None  # on_grant resumes only a task with the granted step
        if action == "decide":
            by = str(approval.get("decided_by") or "operator")
            reason = f"{granted_reason(approval_id)} by {by} at {approval.get('decided_at') or '?'}" + _note(approval)
            moved = await self._move(task_id, approval_id, lambda t: statemachine.transition(
                t, "queued", by=by, now=self._store.clock(), reason=reason))
            if moved is None:
                return "ack"
        log.info("approval granted: resuming the task", task=task_id, approval=approval_id, step=step.id)
        verdict = await self._executor.resume_task(task_id, approvals={step.id: approval_id},
                                                   stopping=self._stopping, take_over=action == "resume")
        return _settled(verdict)

    async def _refused(self, approval: dict[str, Any], verb: str) -> Outcome:
        decided = await self._decided_task(approval)
        if not isinstance(decided, tuple):
            return decided
        approval_id, task = decided
        task_id = task.id
        action = on_refusal(task, approval_id)
        if action != "cancel":
            return "nak" if action == "wait" else "ack"
        if verb == "denied":
            by = str(approval.get("decided_by") or "operator")
            reason = f"approval {approval_id} denied by {by} at {approval.get('decided_at') or '?'}" + _note(approval)
        else:
            by = "gateway"
            reason = f"approval {approval_id} expired (requested {approval.get('requested_at')}, " \
                     f"expired {approval.get('expires_at')}) before anyone decided"
        error = TaskError(code=f"approval_{verb}", message=reason)
        # The user is told before the task moves, so the event is acked only once both are done.
        if await self._executor.settle_waiting(task_id, lambda t: t.approval_id == approval_id, by=by, reason=reason,
                                               error=error, notice=lambda locale: refused_notice(verb, locale=locale)):
            log.info("approval refused: task cancelled", task=task_id, approval=approval_id, verb=verb)
        return "ack"

    async def _move(self, task_id: str, approval_id: str, change: Callable[[Task], Task]) -> Task | None:
        """Apply `change` if the task still waits for this approval (compare-and-set)."""
        return await self._move_if(task_id, lambda t: t.approval_id == approval_id, change)

    async def _move_if(self, task_id: str, waits_for_it: Callable[[Task], bool],
                       change: Callable[[Task], Task]) -> Task | None:
        """Apply `change` if the task is still parked on what `waits_for_it` checks (compare-and-set);
        None when it is not (another runner or an earlier delivery moved it first)."""
        applied = False

        def guarded(task: Task) -> Task:
            nonlocal applied
            if task.state != "awaiting_approval" or not waits_for_it(task):
                return task
            applied = True
            return change(task)

        updated = await self._store.change(task_id, guarded)
        return updated if applied else None

    async def _answered(self, event: EventEnvelope, body: dict[str, Any], redelivered: bool) -> Outcome | RetryLater:
        interaction_id, value = body.get("interaction_id"), body.get("value")
        if not isinstance(interaction_id, str) or value is None:
            return "ack"
        parsed = interactions.parse_interaction_id(interaction_id)
        if parsed is None:
            return "ack"
        task_id, step_id = parsed
        found = await self._store.get(task_id)
        task = found[0] if found is not None else None
        if task is not None and not _from_its_conversation(task, event, interaction_id):
            return "ack"
        at = event.header.timestamp
        action = interactions.on_answer(task, step_id, interaction_id, str(value), answered_at=at,
                                        redelivered=redelivered, now=datetime.now(UTC))
        if action == "wait":  # the answer beat the runner parking the task for it: come back then
            log.info("an answer came before its task waits for it: it comes back", task=task_id,
                     interaction=interaction_id, stored=task is not None)
            return "nak"
        if action == "ignore":
            return "ack"
        waiting = task.step(step_id) if task is not None else None
        if action == "record" and waiting is not None:
            actor = event.payload.actor
            by = f"{actor.kind} {actor.id}" if actor is not None else "the user"
            reason = f"interaction {interaction_id} answered by {by} at {at}"
            answered = interactions.answered_step(waiting, str(value), by=by, at=at)

            def record(current: Task) -> Task:
                logged = statemachine.record_steps(current, [answered], now=self._store.clock())
                return statemachine.transition(logged, "queued", by=by, now=self._store.clock(), reason=reason)

            if await self._move_if(task_id, lambda t: t.interaction_id == interaction_id, record) is None:
                return "ack"
        log.info("interaction answered: resuming the task", task=task_id, interaction=interaction_id)
        # "resume": an earlier delivery recorded the answer and its runner stopped mid-resume.
        verdict = await self._executor.resume_task(task_id, stopping=self._stopping, take_over=action == "resume")
        return _settled(verdict)


def _from_its_conversation(task: Task, event: EventEnvelope, interaction_id: str) -> bool:
    """The answer comes from the app and the conversation the question was asked in."""
    target = task.delivery.reply_target
    session = event.payload.session_id
    if target is not None and event.header.source.app != target.app:
        log.warning("an answer from another app ignored", task=task.id, interaction=interaction_id,
                    app=event.header.source.app)
        return False
    if target is not None and target.session_id and session and session != target.session_id:
        log.warning("an answer from another conversation ignored", task=task.id, interaction=interaction_id)
        return False
    return True


def _settled(verdict: object) -> Outcome | RetryLater:
    if isinstance(verdict, RetryLater):
        return verdict
    return "nak" if verdict in ("nak", "retry") else "ack"


def _note(approval: dict[str, Any]) -> str:
    note = approval.get("note")
    return f": {note}" if note else ""
