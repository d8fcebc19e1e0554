"""Audit records: one per tool call on `<p>.audit.<app>`, summaries truncated, secrets redacted
(the record is built in `Reporting.record_call` with the gateway's `GatewayRedaction`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import msgspec

from shared.contracts.audit import AuditRecord
from shared.contracts.subjects import Subjects
from shared.nats.acked_publish import AckedPublisher

AuditItem = tuple[str, AuditRecord]


def audit_publisher(acks: AckedPublisher, subjects: Subjects) -> Callable[[AuditItem], Awaitable[asyncio.Future[int]]]:
    """The outbox's send function: the call id de-duplicates a record published twice."""

    async def send(item: AuditItem) -> asyncio.Future[int]:
        return await acks.send(*audit_message(subjects, item))

    return send


def audit_sender_now(acks: AckedPublisher, subjects: Subjects) -> Callable[[AuditItem], asyncio.Future[int] | None]:
    """The outbox's `send_now`: the record published without waiting, or None (then `send` takes it)."""

    def send_now(item: AuditItem) -> asyncio.Future[int] | None:
        return acks.send_now(*audit_message(subjects, item))

    return send_now


def audit_message(subjects: Subjects, item: AuditItem) -> tuple[str, bytes, dict[str, str]]:
    app_id, record = item
    return subjects.audit(app_id), msgspec.json.encode(record), {"Nats-Msg-Id": f"audit:{record.call_id}"}
