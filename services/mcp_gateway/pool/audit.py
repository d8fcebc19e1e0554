"""Audit records: one per tool call on `<p>.audit.<app>`, summaries truncated, secrets redacted
(the record is built in `Reporting.record_call` with the gateway's `GatewayRedaction`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec
from nats.js import JetStreamContext

from shared.contracts.audit import AuditRecord
from shared.subjects import Subjects

AuditItem = tuple[str, AuditRecord]


def audit_publisher(js: JetStreamContext, subjects: Subjects) -> Callable[[AuditItem], Awaitable[None]]:
    """The outbox's publish function: the call id de-duplicates a record published twice."""

    async def publish(item: AuditItem) -> None:
        app_id, record = item
        await js.publish(
            subjects.audit(app_id), msgspec.json.encode(record), headers={"Nats-Msg-Id": f"audit:{record.call_id}"}
        )

    return publish
