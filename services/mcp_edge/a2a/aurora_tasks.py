"""Aurora's side of an A2A task, for the edge: publish the message's event, find the task it
started, read it, follow it as it changes, cancel it.

The edge writes no task: tasks are the runners' (KV_AMP_TASKS, read here), a cancel is the
runners' admin `tasks.cancel`, the event goes through the event-bridge as the edge's platform
signal. Following a task is a short-lived pull consumer on its one key (`mcp-edge_eph_…`),
the latest revision first, then each change.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import KeyNotFoundError

from services.mcp_edge.a2a.intake import candidate_task_ids, routing_bindings
from shared.contracts.approval import Approval
from shared.contracts.run import RunRecord
from shared.contracts.signals import PlatformEventSignal
from shared.contracts.subjects import Subjects
from shared.contracts.task import Task, decode_task
from shared.errors import AuroraError
from shared.jetstream.bucket import Bucket
from shared.jetstream.consumers import pull_ephemeral
from shared.jetstream.kvmirror import read_all_without_consumer
from shared.jetstream.pulls import Puller
from shared.jetstream.run_records import read_record
from shared.nats.admin_service import admin_request
from shared.nats.signal_publisher import publish_signal
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_edge.a2a")
_approval = msgspec.json.Decoder(Approval)
_record = msgspec.json.Decoder(RunRecord)
FOLLOW_INACTIVE = 30.0  # the server drops a follower whose edge went away
# A task id is a run id (`run_id_for`: a UUID); anything else is no task, and never a KV key.
_RUN_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Found:
    """Where a message went: the run the router made of it (`task_id`), and its task once a
    runner took the run (None before: the run waits in the queue, it is `submitted`)."""

    task_id: str | None
    task: Task | None = None


class TaskUnavailable(AuroraError):
    """A task operation Aurora cannot do now (no runner answered a cancel, NATS away)."""


class AuroraTasks:
    def __init__(self, nc: NATS, subjects: Subjects, *, tasks: Bucket, records: Bucket, bindings: Bucket,
                 approvals: Bucket, find_seconds: float = 10.0, poll_seconds: float = 0.1) -> None:
        self._nc = nc
        self._subjects = subjects
        self._tasks = tasks
        self._records = records
        self._bindings = bindings
        self._approvals = approvals
        self.find_seconds = find_seconds
        self._poll_seconds = poll_seconds

    async def publish(self, signal: PlatformEventSignal) -> None:
        """Stored (acked by JetStream) before this returns: the bridge makes it the event."""
        await publish_signal(self._nc.jetstream(), self._subjects, signal)

    async def get(self, task_id: str) -> Task | None:
        if not _RUN_ID.fullmatch(task_id):
            return None
        try:
            entry = await self._tasks.get(task_id)
        except KeyNotFoundError:
            return None
        return decode_task(entry.value) if entry.value else None

    async def record(self, run_id: str) -> RunRecord | None:
        """The router's record of the run: who sent its event (source app, actor), which agent."""
        if not _RUN_ID.fullmatch(run_id):
            return None
        data = await read_record(self._records, run_id)  # a run's record, or one written before runs moved in
        return _record.decode(data) if data else None

    async def approval(self, approval_id: str | None) -> Approval | None:
        if approval_id is None:
            return None
        try:
            entry = await self._approvals.get(approval_id)
        except KeyNotFoundError:
            return None
        return _approval.decode(entry.value) if entry.value else None

    async def find(self, event_id: str, agent: str) -> Found:
        """The run the event became (and its task, if a runner has it already); nothing if the
        router made no run of it in `find_seconds` (no binding routes the message)."""
        stored = (await read_all_without_consumer(self._bindings)).values()
        candidates = candidate_task_ids(event_id, routing_bindings(stored), agent)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.find_seconds
        while candidates:
            for task_id in candidates:
                task = await self.get(task_id)
                if task is not None or await self.record(task_id) is not None:
                    return Found(task_id, task)
            if loop.time() >= deadline:
                break
            await asyncio.sleep(self._poll_seconds)
        return Found(None)

    async def follow(self, task_id: str) -> AsyncGenerator[Task]:
        """Every revision of the task from the latest on, ending with a terminal one."""
        config = ConsumerConfig(deliver_policy=DeliverPolicy.LAST_PER_SUBJECT, ack_policy=AckPolicy.NONE,
                                inactive_threshold=FOLLOW_INACTIVE, mem_storage=True,
                                num_replicas=self._tasks.plan.replicas)
        sub = await pull_ephemeral(self._nc.jetstream(), f"KV_{self._tasks.bucket}",
                                   f"$KV.{self._tasks.bucket}.{task_id}", config, owner=self._tasks.plan.owner)
        puller = Puller(sub)
        try:
            while True:
                try:
                    messages = await puller.fetch(8, 5.0)  # a revision is passed on as it comes
                except NatsTimeoutError:
                    continue
                for msg in messages:
                    if not msg.data:
                        continue  # deleted (its TTL): nothing more will come
                    task = decode_task(msg.data)
                    yield task
                    if task.terminal:
                        return
        finally:
            with contextlib.suppress(Exception):  # the server drops the consumer once idle (no delete right)
                await sub.unsubscribe()

    async def cancel(self, task_id: str, *, by: str) -> dict[str, Any]:
        try:
            result: dict[str, Any] = await admin_request(self._nc, self._subjects, "tasks", "cancel",
                                                         {"id": task_id, "by": by, "reason": "cancelled over A2A"},
                                                         timeout=10)
        except (TimeoutError, NatsTimeoutError) as exc:
            raise TaskUnavailable("no runner answered the cancel; try again") from exc
        return result
