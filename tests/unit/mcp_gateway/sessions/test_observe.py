"""Notifications an app sends → raw signals for the bridge; protocol plumbing is not an event."""

from __future__ import annotations

import pytest

from services.mcp_gateway.sessions.observe import lifecycle_signal, notification_signal
from shared.contracts.signals import LifecycleSignal, ListChangedSignal, NativeEventSignal, NotificationSignal


@pytest.mark.parametrize(("method", "kind"), [
    ("notifications/tools/list_changed", "tools"),
    ("notifications/resources/list_changed", "resources"),
    ("notifications/prompts/list_changed", "prompts"),
])
def test_list_changed_becomes_a_list_changed_signal(method: str, kind: str) -> None:
    signal = notification_signal("acme.notes", "default", method, None)
    assert isinstance(signal, ListChangedSignal)
    assert signal.list == kind and signal.app == "acme.notes" and signal.instance == "default"


def test_aurora_event_becomes_a_native_event_with_its_params_untouched() -> None:
    params = {"header": {"method": "aurora/event"},
              "payload": {"type": "weather.alert", "data": {"wind_kph": 120.0, "n": 1}}}
    signal = notification_signal("im.polaris.weather", "default", "aurora/event", params)
    assert isinstance(signal, NativeEventSignal)
    assert signal.event == params and signal.app == "im.polaris.weather"


def test_a_vendor_notification_is_kept_verbatim() -> None:
    signal = notification_signal("im.polaris.weather", "b", "notifications/acme/ping", {"n": [1, None]})
    assert isinstance(signal, NotificationSignal)
    assert signal.method == "notifications/acme/ping" and signal.params == {"n": [1, None]}
    assert signal.instance == "b"


def test_a_notification_without_params_is_still_observed() -> None:
    signal = notification_signal("x", "default", "notifications/message", None)
    assert isinstance(signal, NotificationSignal) and signal.params is None


@pytest.mark.parametrize("method", ["notifications/progress", "notifications/cancelled"])
def test_progress_and_cancellation_are_not_events(method: str) -> None:
    assert notification_signal("x", "default", method, {"progressToken": 1, "progress": 0.5}) is None


def test_every_signal_gets_its_own_id_and_a_timestamp() -> None:
    a = notification_signal("x", "default", "notifications/acme/ping", None)
    b = notification_signal("x", "default", "notifications/acme/ping", None)
    assert a is not None and b is not None and a.signal_id != b.signal_id and a.observed_at


def test_a_lifecycle_signal_carries_state_reason_and_detail() -> None:
    signal = lifecycle_signal("test.silent", "default", "init_failed", "initialize did not finish within 1s",
                              {"transport": "stdio"})
    assert isinstance(signal, LifecycleSignal)
    assert (signal.state, signal.reason, signal.detail) == (
        "init_failed", "initialize did not finish within 1s", {"transport": "stdio"})


def test_an_event_sent_until_confirmed_has_one_signal_id_for_every_copy() -> None:
    params = {"payload": {"type": "message.received"}}
    copies = [notification_signal("test.chat", "default", "aurora/event", params, receipt="ab12.7") for _ in range(2)]
    other = notification_signal("test.chat", "default", "aurora/event", params, receipt="ab12.8")
    unconfirmed = [notification_signal("test.chat", "default", "aurora/event", params) for _ in range(2)]
    assert copies[0] is not None and copies[1] is not None and other is not None
    assert copies[0].signal_id == copies[1].signal_id != other.signal_id
    assert unconfirmed[0] is not None and unconfirmed[1] is not None
    assert unconfirmed[0].signal_id != unconfirmed[1].signal_id
