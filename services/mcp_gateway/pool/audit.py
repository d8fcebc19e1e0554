"""Audit records: one per tool call on `<p>.audit.<app>`, summaries truncated, secrets redacted
(the record is built in `Reporting.record_call` with the gateway's `GatewayRedaction`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import msgspec

from shared.acked_publish import AckedPublisher
from shared.contracts.audit import AuditRecord
from shared.subjects import Subjects

AuditItem = tuple[str, AuditRecord]


def audit_publisher(acks: AckedPublisher, subjects: Subjects) -> Callable[[AuditItem], Awaitable[asyncio.Future[int]]]:
    """The outbox's send function: the call id de-duplicates a record published twice."""

    async def send(item: AuditItem) -> asyncio.Future[int]:
        app_id, record = item
        return await acks.send(
            subjects.audit(app_id), msgspec.json.encode(record), headers={"Nats-Msg-Id": f"audit:{record.call_id}"}
        )

    return send
