"""Pure mapping of what an MCP session observed to raw signals for the bridge."""

from __future__ import annotations

from typing import Any

from shared.clock import now_iso
from shared.contracts.signals import (
    LifecycleSignal,
    LifecycleState,
    ListChangedSignal,
    NativeEventSignal,
    NotificationSignal,
    SignalBase,
)
from shared.signal_publisher import new_signal_id

LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
# Protocol plumbing, not events: progress and cancellation belong to the request they concern.
# The acknowledgement opening a 2026-07-28 `subscriptions/listen` stream is the stream's own.
IGNORED = {"notifications/progress", "notifications/cancelled", "notifications/subscriptions/acknowledged"}
NATIVE_EVENT = "aurora/event"


def notification_signal(app_id: str, instance: str, method: str, params: dict[str, Any] | None) -> SignalBase | None:
    common: dict[str, Any] = {
        "signal_id": new_signal_id(),
        "app": app_id,
        "instance": instance,
        "observed_at": now_iso(),
    }
    if method in IGNORED:
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
