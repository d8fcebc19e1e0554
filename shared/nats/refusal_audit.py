"""Requests a service refused to take, on the audit.

A JetStream delivery onto one of a service's request subjects (shared/nats/request_guard.py) is
refused there and, besides the log line, written to the audit stream by the refusing service
with its own identity, on `<p>.audit.refused.<service>`: deploy/nats-auth.conf lets each service
publish there and nowhere else under `<p>.audit.`, so none can write another's refusals, nor a
tool call's record (the gateway's alone, which the event-bridge makes `tool.*` events of and the
runners' recovery reads; neither takes a call's outcome from these records).

The record is an `AuditRecord`, as a refused tool call's: `tool` names the endpoint, `caller` the
delivery (`delivery:<stream>/<consumer>`: the refusing service cannot know who made the consumer,
whose name is its maker's choice; nats-server's `$JS.EVENT.ADVISORY.CONSUMER.CREATED` names the
client), `status` `denied` with `error_code` `stream_delivery`, the reason, and the message's
stream, sequence and own subject (a delivery keeps the subject it was stored under). Its call id
is made of the service, stream, consumer and stream sequence, so a message delivered again is
the same record (JetStream drops the duplicate by its Nats-Msg-Id).

A consumer can deliver a whole stream, so a process audits at most `LIMIT` refusals in any
`WINDOW` seconds; beyond that the log line says the record was left out.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from contextlib import AsyncExitStack

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError

from shared.clock import now_iso
from shared.contracts.audit import AuditRecord
from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle
from shared.nats.bus import Connection
from shared.nats.request_guard import REASON, RefusedDelivery
from shared.observability.logs import get_logger

log = get_logger("aurora.refusal_audit")

LIMIT = 60
WINDOW = 60.0  # seconds
ERROR_CODE = "stream_delivery"


def refusal_record(service: str, refusal: RefusedDelivery) -> AuditRecord:
    where = (f"message {refusal.sequence} of stream {refusal.stream} (subject {refusal.subject}) delivered to "
             f"{refusal.endpoint} by consumer {refusal.consumer}")
    return AuditRecord(
        call_id=f"refused-{service}-{refusal.stream}-{refusal.consumer}-{refusal.sequence}",
        at=now_iso(), tool=refusal.endpoint, system=None,
        caller=f"delivery:{refusal.stream}/{refusal.consumer}",
        status="denied", error_code=ERROR_CODE, error_message=f"{REASON}; {where}",
        input_summary=where, executed=False,
    )


class RefusalAudit(Lifecycle[None]):
    """The sink `request_guard` calls with each refusal: the record, published without blocking.

    From `start()` to `stop()` it is the refusal sink of its connection (a `Connection`: the
    refusals its subscriptions make are audited as `service`); `stop()` waits until the records
    made are published, before the service's connection is drained."""

    def __init__(self, nc: NATS, subjects: Subjects, service: str, *, limit: int = LIMIT,
                 window: float = WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(f"the refusal audit of {service}")
        self._nc = nc
        self._js = nc.jetstream()
        self._service = service
        self._subject = subjects.audit_refused(service)
        self._limit, self._window, self._clock = limit, window, clock
        self._recent: deque[float] = deque()  # when the records of the last window were made
        self._sending: set[asyncio.Task[None]] = set()

    async def _start(self, parts: AsyncExitStack) -> None:
        nc = self._nc
        if not isinstance(nc, Connection):  # a refusal reaches only the sink of a connection made by shared.nats.bus
            raise TypeError(f"refusals are audited on a shared.nats.bus.Connection, not a {type(nc).__name__}")
        nc.refusal_sink = self
        parts.push_async_callback(self._detach, nc)

    async def _detach(self, nc: Connection) -> None:
        if nc.refusal_sink is self:
            nc.refusal_sink = None
        await self.sent()

    def __call__(self, refusal: RefusedDelivery) -> None:
        now = self._clock()
        while self._recent and now - self._recent[0] >= self._window:
            self._recent.popleft()
        if len(self._recent) >= self._limit:
            log.warning("refusal not audited: too many", endpoint=refusal.endpoint, consumer=refusal.consumer,
                        limit=self._limit, window_seconds=self._window)
            return
        self._recent.append(now)
        task = asyncio.get_running_loop().create_task(self._publish(refusal_record(self._service, refusal)))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def sent(self) -> None:
        """Until the records made so far are published (or their loss logged)."""
        await asyncio.gather(*self._sending, return_exceptions=True)

    async def _publish(self, record: AuditRecord) -> None:
        try:
            await self._js.publish(self._subject, msgspec.json.encode(record),
                                   headers={"Nats-Msg-Id": f"audit:{record.call_id}"}, timeout=5.0)
        except (NatsError, TimeoutError) as exc:  # the refusal stands; its record is lost, and said so
            log.warning("refusal not audited", call_id=record.call_id, error=str(exc) or type(exc).__name__)

