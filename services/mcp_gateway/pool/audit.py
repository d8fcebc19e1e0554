"""Audit records: one per tool call on `<p>.audit.<app>`, summaries truncated, secrets redacted."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from nats.js import JetStreamContext

from shared.contracts.audit import AuditRecord
from shared.subjects import Subjects

SECRET_KEYS = re.compile(r"(pass(word)?|secret|token|api[_-]?key|authorization|credential|cookie)", re.I)
REDACTED = "***"


def redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if SECRET_KEYS.search(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def summarize(value: Any, limit: int = 512) -> str:
    text = json.dumps(redact(value), ensure_ascii=False, default=str, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


AuditItem = tuple[str, AuditRecord]


def audit_publisher(js: JetStreamContext, subjects: Subjects) -> Callable[[AuditItem], Awaitable[None]]:
    """The outbox's publish function: the call id de-duplicates a record published twice."""

    async def publish(item: AuditItem) -> None:
        app_id, record = item
        await js.publish(
            subjects.audit(app_id), msgspec.json.encode(record), headers={"Nats-Msg-Id": f"audit:{record.call_id}"}
        )

    return publish
