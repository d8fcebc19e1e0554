"""Reading a run's event, wherever it travelled: inline, or in the Object Store by reference."""

from __future__ import annotations

import msgspec
from nats.js import JetStreamContext

from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import RunPayload
from shared.errors import AuroraError

_decoder = msgspec.json.Decoder(EventEnvelope)


class RunEventError(AuroraError):
    """A run's event cannot be read: neither inline nor a readable, complete reference."""


async def run_event(js: JetStreamContext, payload: RunPayload[EventEnvelope]) -> EventEnvelope:
    if payload.event is not None:
        return payload.event
    ref = payload.event_ref
    if ref is None:
        raise RunEventError(f"run {payload.run_id} carries neither an event nor an event_ref")
    try:
        store = await js.object_store(ref.bucket)
        found = await store.get(ref.name)
    except Exception as exc:
        raise RunEventError(f"run {payload.run_id}: event {ref.bucket}/{ref.name} unreadable: {exc}") from exc
    data = bytes(found.data or b"")
    if len(data) != ref.size:
        raise RunEventError(
            f"run {payload.run_id}: event {ref.bucket}/{ref.name} has {len(data)} bytes, expected {ref.size}"
        )
    return _decoder.decode(data)
