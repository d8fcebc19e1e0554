"""A 2026-07-28 listen stream's acknowledgement is plumbing; the changes it carries are events."""

from __future__ import annotations

from services.mcp_gateway.sessions.observe import notification_signal
from shared.contracts.signals import ListChangedSignal

STREAM = {"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}}


def test_the_acknowledgement_makes_no_signal_and_a_stream_change_is_a_list_change() -> None:
    ack = {**STREAM, "notifications": {"toolsListChanged": True}}
    assert notification_signal("acme.orders", "default", "notifications/subscriptions/acknowledged", ack) is None
    changed = notification_signal("acme.orders", "default", "notifications/tools/list_changed", STREAM)
    assert isinstance(changed, ListChangedSignal) and changed.list == "tools"
