"""Builders for routing tests: valid AMP events and binding/agent/pipeline documents."""

from __future__ import annotations

import uuid
from typing import Any

from services.router.events import decode_event, encode_document
from shared.contracts.agent import AgentRouting
from shared.contracts.binding import Binding
from shared.contracts.envelope import EventEnvelope
from shared.contracts.pipeline import PipelineRouting
from shared.contracts.resource import parse_resource


def event_doc(event_type: str = "message.received", *, app: str = "im.polaris.qq",
              message_id: str | None = None, **payload: Any) -> dict[str, Any]:
    return {
        "header": {
            "protocol": "amp/1.0", "method": "aurora/event",
            "message_id": message_id or str(uuid.uuid4()),
            "timestamp": "2026-06-19T12:00:00+08:00",
            "source": {"app": app, "instance": "default"},
        },
        "payload": {"type": event_type, **payload},
    }


def event(event_type: str = "message.received", **kwargs: Any) -> EventEnvelope:
    return decode_event(encode_document(event_doc(event_type, **kwargs)))


def binding(id: str, pattern: str = "*", target_type: str = "agent", target_id: str | None = "a1",
            **fields: Any) -> Binding:
    doc: dict[str, Any] = {"id": id, "event_pattern": pattern, "target_type": target_type, **fields}
    if target_type != "discard":
        doc["target_id"] = target_id
    return parse_resource(Binding, doc)


def agent(id: str = "a1", events: tuple[str, ...] = ("*",), enabled: bool = True) -> AgentRouting:
    return AgentRouting(id=id, events=events, enabled=enabled)


def pipeline(id: str = "p1", enabled: bool = True) -> PipelineRouting:
    return PipelineRouting(id=id, enabled=enabled)
