"""Pure mapping of what an MCP session observed to raw signals for the bridge."""

from __future__ import annotations

import uuid
from typing import Any

from shared.clock import now_iso
from shared.contracts.signals import (
    PLUMBING_NOTIFICATIONS,
    LifecycleSignal,
    LifecycleState,
    ListChangedSignal,
    NativeEventSignal,
    NotificationSignal,
    SignalBase,
)
from shared.ids import uuid5_text
from shared.nats.signal_publisher import new_signal_id

LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
NATIVE_EVENT = "aurora/event"
_RECEIPT_NAMESPACE = uuid.UUID("0b6f4c1e-3d2a-4f59-8e71-5a9c2d4b7e13")


def receipt_signal_id(receipt: str) -> str:
    """The signal id of an event the supervisor sends until it is confirmed stored: the same for
    every copy, so JetStream keeps one (`Nats-Msg-Id`) and the bridge makes one event of it."""
    return uuid5_text(_RECEIPT_NAMESPACE, receipt)


def notification_signal(app_id: str, instance: str, method: str, params: dict[str, Any] | None,
                        receipt: str | None = None) -> SignalBase | None:
    common: dict[str, Any] = {
        "signal_id": new_signal_id() if receipt is None else receipt_signal_id(receipt),
        "app": app_id,
        "instance": instance,
        "observed_at": now_iso(),
    }
    if method in PLUMBING_NOTIFICATIONS:
        return None
    if method in LIST_CHANGED:
        return ListChangedSignal(**common, list=LIST_CHANGED[method])  # type: ignore[arg-type]
    if method == NATIVE_EVENT:
        return NativeEventSignal(**common, event=params)
    return NotificationSignal(**common, method=method, params=params)


def lifecycle_signal(
    app_id: str, instance: str, state: LifecycleState, reason: str | None = None, detail: dict[str, Any] | None = None
) -> LifecycleSignal:
    return LifecycleSignal(
        signal_id=new_signal_id(),
        app=app_id,
        instance=instance,
        observed_at=now_iso(),
        state=state,
        reason=reason,
        detail=detail or {},
    )
