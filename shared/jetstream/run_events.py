"""Reading a run's event, wherever it travelled: inline, or in the Object Store by reference."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from contextlib import suppress

import msgspec
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import RunPayload
from shared.errors import AuroraError
from shared.jetstream.consumers import pull_ephemeral

_decoder = msgspec.json.Decoder(EventEnvelope)


class RunEventError(AuroraError):
    """A run's event cannot be read: neither inline nor a readable, complete reference."""


async def run_event(js: JetStreamContext, payload: RunPayload[EventEnvelope], *,
                    plan: StreamPlan = DEFAULT_PLAN) -> EventEnvelope:
    if payload.event is not None:
        return payload.event
    ref = payload.event_ref
    if ref is None:
        raise RunEventError(f"run {payload.run_id} carries neither an event nor an event_ref")
    try:
        data = await read_object(js, ref.bucket, ref.name, plan=plan)
    except Exception as exc:
        raise RunEventError(f"run {payload.run_id}: event {ref.bucket}/{ref.name} unreadable: {exc}") from exc
    if len(data) != ref.size:
        raise RunEventError(
            f"run {payload.run_id}: event {ref.bucket}/{ref.name} has {len(data)} bytes, expected {ref.size}"
        )
    return _decoder.decode(data)


async def read_object(js: JetStreamContext, bucket: str, name: str, *, plan: StreamPlan = DEFAULT_PLAN,
                      timeout: float = 10.0) -> bytes:
    """An object's bytes, read through a named pull consumer on its chunks (nats-py's
    `ObjectStore.get` creates an ordered consumer with the bare create, which services may not
    send); its digest is checked as nats-py checks it."""
    info = await (await js.object_store(bucket)).get_info(name)
    if not info.nuid:
        raise RunEventError(f"object {bucket}/{name} has no chunks id")
    if not info.size:
        return b""
    config = ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL, inactive_threshold=30.0,
                            mem_storage=True, num_replicas=plan.replicas)
    sub = await pull_ephemeral(js, f"OBJ_{bucket}", f"$O.{bucket}.C.{info.nuid}", config, owner=plan.owner)
    data = bytearray()
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        pending = True
        while pending:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise RunEventError(f"object {bucket}/{name}: only {len(data)} of {info.size} bytes within {timeout}s")
            for msg in await sub.fetch(256, timeout=left):
                data += msg.data
                pending = msg.metadata.num_pending > 0
    finally:
        with suppress(Exception):
            await sub.unsubscribe()
    stored = (info.digest or "").partition("=")[2]  # "SHA-256=<base64url>"
    if stored and base64.urlsafe_b64decode(stored) != hashlib.sha256(data).digest():
        raise RunEventError(f"object {bucket}/{name}: its bytes do not match its digest {info.digest}")
    return bytes(data)
