"""Publishing raw signals for the event-bridge (used by supervisor, gateway and CLI)."""

from __future__ import annotations

import asyncio
import uuid

from nats.js import JetStreamContext
from nats.js.api import PubAck

from shared.contracts.signals import SignalBase, encode_signal, signal_kind
from shared.contracts.subjects import Subjects
from shared.nats.acked_publish import AckedPublisher
from shared.observability.trace_context import inject_headers


def new_signal_id() -> str:
    return str(uuid.uuid4())


async def publish_signal(js: JetStreamContext, subjects: Subjects, signal: SignalBase) -> PubAck:
    """Publish once-only: the signal id is the JetStream de-duplication id."""
    headers = inject_headers({"Nats-Msg-Id": signal.signal_id})
    return await js.publish(
        subjects.signal(signal.app, signal_kind(signal)), encode_signal(signal), headers=headers
    )


async def send_signal(acks: AckedPublisher, subjects: Subjects, signal: SignalBase) -> asyncio.Future[int]:
    """`publish_signal` that returns once the signal is sent, with the future of its ack."""
    headers = inject_headers({"Nats-Msg-Id": signal.signal_id})
    return await acks.send(subjects.signal(signal.app, signal_kind(signal)), encode_signal(signal), headers=headers)
