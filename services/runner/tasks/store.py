"""Tasks in KV: created once per run id, changed only by compare-and-set on the revision.

A `TaskHandle` is one runner's hold on one task for one attempt. Steps that are safe to lose
(reads, skips) are staged in memory and written with the next change that must be durable (a
write step's `started` record, a state change). A conflicting write means either an operator
asked to cancel (the change is applied again on the fresh task, which keeps the request) or
another runner took the task over (`LostOwnership`: stop at once, touch nothing).

A new run's task is not written when the run is taken: its first durable change creates it,
create-only (`TaskStore.unstored`), so a run that ends at once is one revision, its final state
(issue 38: a stored message less per event). Nothing is lost by the wait: until then the run
has sent nothing that is not safe to repeat — reads, model calls, and a playbook's first call of
a write, which the gateway's call ledger claims under a call id the same in every attempt
(steps/tool_steps.py) — so a runner that dies leaves its run message, which comes back and runs
again from the start, a write made again answered from the ledger. Two attempts of one run (its message
came back while the first still ran) meet at that create: the later one finds the task stored
(`TaskExists`) and goes on from it as from a task already there. A run that takes longer is
stored within a moment anyway (tasks/watch.py), so operators see it running and can cancel it.

Every revision that adds a transition is that transition's `task.*` event: the event-bridge
makes it from the bucket (services/event_bridge/task_events.py), so nothing here publishes one.
Each write carries the writer's trace context (`traceparent`) in its headers, which the bridge
continues in the event, as it did the runner's signal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime

from nats.js import JetStreamContext
from nats.js.api import Header
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from services.runner.errors import LostOwnership, TaskExists
from services.runner.tasks import statemachine
from shared.clock import now_iso
from shared.contracts.task import Task, TaskStep, decode_task, encode_task
from shared.observability import metrics
from shared.observability.logs import get_logger
from shared.observability.trace_context import inject_headers

log = get_logger("aurora.runner.tasks")
_MAX_CONFLICTS = 20
_WRONG_LAST_SEQUENCE = (10071, 10164)  # the codes nats-py's KeyValue.update turns into KeyWrongLastSequenceError

Write = Callable[[Task, int], Awaitable[int]]  # (task, last revision) → the new revision
Create = Callable[[Task], Awaitable[int | None]]  # create-only: the revision, None when it exists


def record_run(task: Task) -> None:
    """How long the task took, from its creation to this final state (`aurora.run.duration`)."""
    try:
        took = (datetime.fromisoformat(task.updated_at) - datetime.fromisoformat(task.created_at)).total_seconds()
    except ValueError:
        return
    metrics.run_duration.record(max(took, 0.0), {"agent": task.agent or f"{task.target.type}/{task.target.id}",
                                                 "state": task.state})


def _written(before: Task | None, after: Task) -> None:
    """After a write: a transition into a final state is the end of the run, measured."""
    moved = before is None or len(after.transitions) != len(before.transitions)
    if moved and after.terminal:
        record_run(after)


class TaskStore:
    def __init__(self, kv: KeyValue, *, js: JetStreamContext, bucket: str, clock: Callable[[], str] = now_iso) -> None:
        self._kv = kv
        self._js = js
        self._bucket = bucket
        self.clock = clock

    async def _write(self, task: Task, last: int) -> int:
        """`KeyValue.update`, with the current span's `traceparent` in the revision's headers (the
        task event the bridge makes of it continues that trace); nats-py's takes no headers."""
        headers = inject_headers({Header.EXPECTED_LAST_SUBJECT_SEQUENCE: str(last)})
        try:
            ack = await self._js.publish(f"$KV.{self._bucket}.{task.id}", encode_task(task), headers=headers)
        except APIError as exc:
            if exc.err_code in _WRONG_LAST_SEQUENCE:
                raise KeyWrongLastSequenceError(description=exc.description) from exc
            raise
        return ack.seq

    async def get(self, task_id: str) -> tuple[Task, int] | None:
        try:
            entry = await self._kv.get(task_id)
        except KeyNotFoundError:
            return None
        if entry.value is None or entry.revision is None:
            return None
        return decode_task(entry.value), entry.revision

    async def create(self, task: Task) -> int | None:
        """Create-only: the revision, or None when the task already exists."""
        revision = await self._create_only(task)
        if revision is not None:
            _written(None, task)
        return revision

    async def _create_only(self, task: Task) -> int | None:
        try:
            return await self._write(task, 0)
        except KeyWrongLastSequenceError:
            try:  # a deleted task's key: nats-py's create writes over its marker
                return await self._kv.create(task.id, encode_task(task))
            except KeyWrongLastSequenceError:
                return None

    async def keys(self) -> list[str]:
        """Every task id, from the bucket stream's subjects. Not a KV watcher: a runner may not
        create consumers on the tasks bucket (deploy/nats-auth.conf says why)."""
        prefix = f"$KV.{self._bucket}."
        info = await self._js.stream_info(f"KV_{self._bucket}", subjects_filter=f"{prefix}>")
        return [subject[len(prefix):] for subject in (info.state.subjects or {})]

    async def all(self) -> list[Task]:
        limit = asyncio.Semaphore(64)

        async def one(key: str) -> Task | None:
            async with limit:
                try:
                    found = await self.get(key)
                except Exception as exc:  # one unreadable entry must not hide the others
                    log.warning("stored task ignored", key=key, error=str(exc))
                    return None
            return found[0] if found is not None else None

        return [task for task in await asyncio.gather(*(one(key) for key in await self.keys())) if task is not None]

    async def change(self, task_id: str, change: Callable[[Task], Task]) -> Task | None:
        """Apply `change` with a compare-and-set, retrying on a race (admin changes)."""
        for _ in range(_MAX_CONFLICTS):
            found = await self.get(task_id)
            if found is None:
                return None
            task, revision = found
            updated = change(task)
            if updated is task:
                return task
            try:
                await self._write(updated, revision)
            except KeyWrongLastSequenceError:
                continue
            _written(task, updated)
            return updated
        raise RuntimeError(f"task {task_id} kept changing; try again")

    def handle(self, task: Task, revision: int) -> TaskHandle:
        return TaskHandle(self._kv, self._write, task, revision, self.clock)

    def unstored(self, task: Task) -> TaskHandle:
        """A hold on a new task not written yet: its first durable change creates it, or raises
        `TaskExists` when another attempt of the run stored the task first."""
        return TaskHandle(self._kv, self._write, task, 0, self.clock, create=self._create_only)


class TaskHandle:
    """One attempt's hold on a task; every durable change goes through `update`."""

    def __init__(self, kv: KeyValue, write: Write, task: Task, revision: int, clock: Callable[[], str], *,
                 create: Create | None = None) -> None:
        self._kv = kv
        self._write = write
        self._create = create  # how a task not stored yet (revision 0) is created
        # One write at a time: the watch (tasks/watch.py) may store the task while the run changes it.
        self._writing = asyncio.Lock()
        self._task = task
        self._revision = revision
        self._clock = clock
        self._staged: list[TaskStep] = []
        self._view: dict[str, TaskStep] = {step.id: step for step in task.steps}
        self._cancel_seen: str | None = None

    @property
    def task(self) -> Task:
        """The task as last written (staged steps not included)."""
        return self._task

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def stored(self) -> bool:
        """Whether the task is in the bucket (a new run's task is written at its first durable change)."""
        return self._revision > 0

    @property
    def cancel_requested(self) -> str | None:
        """Who asked this task to stop, as written or as last polled."""
        return self._task.cancel_requested or self._cancel_seen

    def steps(self) -> list[TaskStep]:
        """Every step this attempt knows of, staged ones included."""
        return list(self._view.values())

    async def poll(self) -> None:
        """Look for a cancel request written since this attempt last wrote."""
        if not self.stored:
            return  # nobody can have asked: the task is not listed yet
        entry = await self._kv.get(self._task.id)
        if entry.value is not None:
            self._cancel_seen = decode_task(entry.value).cancel_requested or self._cancel_seen

    def step(self, step_id: str) -> TaskStep | None:
        """A step as this attempt knows it, staged ones included."""
        return self._view.get(step_id)

    def stage(self, step: TaskStep) -> None:
        """Keep a step that is safe to lose; it is written with the next durable change."""
        self._staged.append(step)
        self._view[step.id] = step

    async def record(self, step: TaskStep) -> Task:
        """Write a step now (with whatever was staged)."""
        self.stage(step)
        return await self.update(lambda task: task)

    async def update(self, change: Callable[[Task], Task]) -> Task:
        async with self._writing:
            if not self.stored:
                return await self._first(change)
            mine = (self._task.attempts, self._task.runner)
            for _ in range(_MAX_CONFLICTS):
                staged = len(self._staged)
                updated = change(statemachine.record_steps(self._task, self._staged, now=self._clock()))
                try:
                    revision = await self._write(updated, self._revision)
                except KeyWrongLastSequenceError:
                    await self._reload(mine)
                    continue
                return self._wrote(updated, revision, staged)
            raise LostOwnership(f"task {self._task.id} kept changing under this runner")

    async def _first(self, change: Callable[[Task], Task]) -> Task:
        """The task's first write: create-only."""
        assert self._create is not None, "a handle on a stored task has a revision"
        staged = len(self._staged)
        updated = change(statemachine.record_steps(self._task, self._staged, now=self._clock()))
        revision = await self._create(updated)
        if revision is None:
            raise TaskExists(f"task {updated.id} was stored by another attempt of its run first")
        return self._wrote(updated, revision, staged)

    def _wrote(self, updated: Task, revision: int, staged: int) -> Task:
        """After a write that carried the first `staged` staged steps (more may have been staged
        while it was on its way: they wait for the next one)."""
        _written(self._task, updated)
        self._task, self._revision = updated, revision
        self._staged = self._staged[staged:]
        self._view = {step.id: step for step in updated.steps}
        self._view.update({step.id: step for step in self._staged})
        return updated

    async def _reload(self, mine: tuple[int, str | None]) -> None:
        try:
            entry = await self._kv.get(self._task.id)
        except KeyNotFoundError as exc:
            raise LostOwnership(f"task {self._task.id} was deleted") from exc
        assert entry.value is not None and entry.revision is not None
        fresh = decode_task(entry.value)
        if (fresh.attempts, fresh.runner) != mine or fresh.terminal:
            raise LostOwnership(f"task {fresh.id} is now attempt {fresh.attempts} of {fresh.runner} ({fresh.state})")
        self._task, self._revision = fresh, entry.revision
        self._view = {step.id: step for step in fresh.steps}
        self._view.update({step.id: step for step in self._staged})
