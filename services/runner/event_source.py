"""A run's event: inline in the run, or from the Object Store when it is large."""

from __future__ import annotations

from nats.js import JetStreamContext

from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import RunPayload
from shared.contracts.task import Task
from shared.jetstream.run_events import run_event


class EventSource:
    """A run's event: inline, or from the Object Store."""

    def __init__(self, js: JetStreamContext, plan: StreamPlan = DEFAULT_PLAN) -> None:
        self._js = js
        self._plan = plan  # a large event is read through a consumer this places and names

    async def read(self, run: RunPayload[EventEnvelope]) -> EventEnvelope:
        return await run_event(self._js, run, plan=self._plan)

    async def read_for(self, task: Task) -> EventEnvelope:
        if task.event is not None:
            return task.event
        placeholder: RunPayload[EventEnvelope] = RunPayload(run_id=task.run_id, target=task.target,
                                                            binding_id=task.binding_id, event_ref=task.event_ref)
        return await self.read(placeholder)
