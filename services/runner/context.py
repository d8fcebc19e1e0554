"""What one attempt at a run knows: its task, its event, where to deliver, and when to stop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from services.runner.errors import CancelRequested, HandBack, StepFailed
from services.runner.tasks.store import TaskHandle
from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import DeliveryContext

T = TypeVar("T")


@dataclass
class RunContext:
    handle: TaskHandle
    event: EventEnvelope
    delivery: DeliveryContext
    synthetic: bool
    runner: str
    stopping: asyncio.Event
    deadline: float  # time.monotonic() after which the run fails at its next step
    # Approvals granted for steps that waited (step id → approval id): the seam where a resumed
    # task calls the tool again with its approval (issue 7 fills it from `approval.granted`).
    approvals: dict[str, str] = field(default_factory=dict)
    partial: list[str] = field(default_factory=list)  # steps that failed while the run went on
    agent: str | None = None  # the agent acting (for a pipeline: its AI stage's agent)
    # The conversation's language, the acting agent's `locale`: the platform's own sentences
    # (hints, notices) are said in it (None: shared/i18n's default).
    locale: str | None = None
    # May a write step's finished outcome wait for the task's next durable change (tool_steps)?
    # Only while the run's path so far is fixed by its event and its recorded steps: a resumed
    # attempt looks the write up under its call id (the gateway's ledger answers the result it
    # recorded) and goes on exactly as the first would have. A pipeline's text stages and a
    # playbook are such; once a model chose part of the run it stays False (see `driven_by`).
    replayable: bool = False

    @property
    def task_id(self) -> str:
        return self.handle.task.id

    @property
    def attempt(self) -> int:
        return self.handle.task.attempts

    def driven_by(self, replayable: bool) -> None:
        """A driver (`AgentDriver.replayable`) takes over the run: a model's part makes the rest of it
        record each write's outcome at once, whatever drives after it."""
        self.replayable = self.replayable and replayable

    def checkpoint(self) -> None:
        """Between steps: stop here when shutting down, cancelled, or out of time."""
        if self.stopping.is_set():
            raise HandBack("the runner is stopping")
        requested = self.handle.cancel_requested
        if requested is not None:
            raise CancelRequested(requested)
        if time.monotonic() > self.deadline:
            raise StepFailed("run_timeout", "the run took longer than the runner allows")

    async def interruptible(self, work: Awaitable[T]) -> T:
        """Await work that is safe to abandon (a model call, a read): a shutdown hands the run
        back at once instead of waiting for it."""
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(self.stopping.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise HandBack("the runner is stopping")
        return task.result()

    def event_view(self) -> dict[str, Any]:
        """The event as templates and models see it: the payload, plus where it came from."""
        header = self.event.header
        view: dict[str, Any] = msgspec.to_builtins(self.event.payload)
        view.update({"message_id": header.message_id, "timestamp": header.timestamp,
                     "source": msgspec.to_builtins(header.source)})
        return view

    def delivery_wire(self) -> dict[str, Any]:
        """The delivery context as tool calls carry it: the frozen reply target (or none), the
        capabilities, and the event's source app (a fact of the event, not a target). The
        gateway decides a call from the router's run record, not from this (it is sent for
        compatibility and for listing the agent's tools)."""
        wire: dict[str, Any] = msgspec.to_builtins(self.delivery)
        wire["source_app"] = self.event.header.source.app
        return wire

    def run_view(self) -> dict[str, Any]:
        return {"id": self.handle.task.run_id, "task_id": self.task_id, "agent": self.agent,
                "locale": self.locale, "synthetic": self.synthetic, "attempt": self.attempt,
                "has_reply_target": self.delivery.reply_target is not None}
