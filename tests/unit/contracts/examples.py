"""Example envelopes: the seed's full one and the smallest valid one."""

from __future__ import annotations

from typing import Any

FULL: dict[str, Any] = {
    "header": {
        "protocol": "amp/1.0",
        "method": "aurora/event",
        "message_id": "9b2f6c1e-0d1a-4f7e-8a55-0c7f6b1d2e3a",
        "timestamp": "2026-06-19T12:00:00+08:00",
        "source": {"app": "im.polaris.qq", "instance": "default"},
        "trace": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                  "tracestate": None},
    },
    "payload": {
        "type": "message.received",
        "session_id": "group_123456",
        "summary": "收到一条群消息",
        "data": {"text": "你好", "count": 3, "nested": {"list": [1, "two", None, True]}},
        "expire_at": None,
        "bot": "bot-1",
        "workspace": "ws",
        "conversation": "c-1",
        "actor": {"id": "u-1", "kind": "user"},
        "subject": {"kind": "message", "id": "m-1"},
        "source_event_type": "GroupMessageEvent",
        "raw_ref": "raw:1",
        "synthetic": False,
    },
}
MINIMAL: dict[str, Any] = {
    "header": {"message_id": "m1", "timestamp": "2026-06-19T04:00:00Z", "source": {"app": "a"}},
    "payload": {"type": "app.connected"},
}
