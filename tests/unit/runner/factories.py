"""Small builders for the runner's unit tests."""

from __future__ import annotations

from typing import Any

import msgspec

from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import DeliveryContext, ReplyTarget, RunPayload, RunTarget
from shared.contracts.task import TaskStep

NOW = "2026-06-19T12:00:00+08:00"


def an_event(**payload: Any) -> EventEnvelope:
    body = {"type": "message.received", "session_id": "g-1", "data": {"text": "hi"}, **payload}
    return msgspec.convert({"header": {"method": "aurora/event", "message_id": "evt-1", "timestamp": NOW,
                                       "source": {"app": "im.polaris.qq"}}, "payload": body}, EventEnvelope)


def a_run(event: EventEnvelope | None = None, *, target: str = "agent",
          reply: bool = True) -> RunPayload[EventEnvelope]:
    delivery = DeliveryContext(reply_target=ReplyTarget(app="im.polaris.qq", session_id="g-1") if reply else None)
    return RunPayload(run_id="run-1", target=RunTarget(type=target, id="helper"),  # type: ignore[arg-type]
                      binding_id="b-1", event=event or an_event(), delivery=delivery)


def a_step(step_id: str = "s1", *, status: str = "finished", kind: str = "tool", side_effect: str | None = "read",
           **extra: Any) -> TaskStep:
    return TaskStep(id=step_id, kind=kind, name="app.tool", status=status, started_at=NOW,  # type: ignore[arg-type]
                    side_effect=side_effect, **extra)
