"""Looking up what the gateway recorded about one call (recovery of a write whose outcome the
runner did not get to write down). The gateway audits every answered call under the call's
envelope id, so finding that record tells the outcome for sure."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

import msgspec
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from shared.contracts.audit import AuditRecord
from shared.contracts.subjects import Subjects
from shared.jetstream.consumers import pull_ephemeral
from shared.jetstream.streams import audit_stream
from shared.observability.logs import get_logger

log = get_logger("aurora.runner.audit")
OWNER = "runner"  # ephemeral consumers are named runner_eph_<random>
_decoder = msgspec.json.Decoder(AuditRecord)


class AuditLookup(Protocol):
    async def find(self, call_id: str, *, since: str) -> AuditRecord | None: ...


class JetStreamAudit:
    """Scans the audit stream from a little before the call started; bounded by `scan_limit`."""

    def __init__(self, js: JetStreamContext, subjects: Subjects, *, scan_limit: int = 200_000) -> None:
        self._js = js
        self._stream = audit_stream(subjects).name
        self._filter = subjects.audit_all
        # Records of requests a service refused are that service's to write: never a call's outcome.
        self._refusal = subjects.is_audit_refusal
        self._limit = scan_limit

    async def find(self, call_id: str, *, since: str) -> AuditRecord | None:
        start = datetime.fromisoformat(since) - timedelta(seconds=5)
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start,
            ack_policy=AckPolicy.NONE, filter_subject=self._filter, inactive_threshold=5.0,
            mem_storage=True,
        )
        try:
            sub = await pull_ephemeral(self._js, self._stream, self._filter, config, owner=OWNER)
        except NotFoundError:
            return None
        needle = call_id.encode()
        scanned = 0
        try:
            while scanned < self._limit:
                try:
                    msgs = await sub.fetch(512, timeout=1.0)
                except (NatsTimeoutError, TimeoutError):
                    return None
                for msg in msgs:
                    scanned += 1
                    if needle in msg.data and not self._refusal(msg.subject):
                        record = _decoder.decode(msg.data)
                        if record.call_id == call_id:
                            return record
                    if msg.metadata.num_pending == 0:
                        return None
            log.warning("audit scan limit reached", call_id=call_id, scanned=scanned)
            return None
        finally:
            await sub.unsubscribe()
