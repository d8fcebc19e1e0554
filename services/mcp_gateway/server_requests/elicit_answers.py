"""Users' chat answers to the questions an elicitation is waiting on, as they happen.

The question waits inside a live MCP call on this gateway, so its answer must reach this very
process, whichever gateway instance consumed other events: a plain (core NATS) subscription to
`<p>.evt.*.interaction.submitted` sees every answer the bridge stores, and hands the ones for a
question waiting here (`eli.` interaction ids) to it. An answer that arrives while no gateway
waits (the call already timed out) has nobody to give it to, and is only in the events stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from shared.contracts.envelope import EventEnvelope
from shared.contracts.signals import INTERACTION_SUBMITTED
from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle, unsubscribe
from shared.nats.request_guard import refusing_deliveries
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.elicit_answers")
PREFIX = "eli."
_decode_event = msgspec.json.Decoder(EventEnvelope).decode


def answers_subject(subjects: Subjects) -> str:
    return f"{subjects.prefix}.evt.*.{INTERACTION_SUBMITTED}"


def interaction_of(event: EventEnvelope) -> str | None:
    data = event.payload.data if isinstance(event.payload.data, dict) else {}
    value = data.get("interaction_id")
    return value if isinstance(value, str) and value.startswith(PREFIX) else None


class ElicitAnswers(Lifecycle[Subscription]):
    """`start()` subscribes; `waiting(id)` is a queue of the answer events for one question."""

    def __init__(self, nc: NATS, subjects: Subjects) -> None:
        super().__init__("the elicitation answers")
        self._nc = nc
        self._subject = answers_subject(subjects)
        self._waiting: dict[str, asyncio.Queue[EventEnvelope]] = {}

    async def _start(self, parts: AsyncExitStack) -> Subscription:
        # the bridge's live publishes; a stream delivery is no user's answer
        sub = await self._nc.subscribe(self._subject, cb=refusing_deliveries(self._subject, self._on_message))
        parts.push_async_callback(unsubscribe, sub)
        return sub

    @contextmanager
    def waiting(self, interaction_id: str) -> Iterator[asyncio.Queue[EventEnvelope]]:
        self.require_started()
        queue: asyncio.Queue[EventEnvelope] = asyncio.Queue(maxsize=100)
        self._waiting[interaction_id] = queue
        try:
            yield queue
        finally:
            self._waiting.pop(interaction_id, None)

    async def _on_message(self, msg: Msg) -> None:
        if not self._waiting:
            return
        try:
            event = _decode_event(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        interaction_id = interaction_of(event)
        queue = self._waiting.get(interaction_id) if interaction_id is not None else None
        if queue is None:
            return
        try:
            queue.put_nowait(event)
        except asyncio.QueueFull:  # someone floods the question with answers: the first ones count
            log.warning("too many answers to one question; dropped", interaction=interaction_id)
