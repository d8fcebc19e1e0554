"""Platform signals (lifecycle, list_changed, tool results, resource reads, notifications) →
their stable event types, with the signal's identity as the event's header."""

from __future__ import annotations

import msgspec
import pytest

from services.event_bridge.mapping import Rejected, map_signal, notification_type
from shared.contracts.envelope import EventEnvelope
from shared.contracts.signals import (
    LifecycleSignal,
    ListChangedSignal,
    NotificationSignal,
    ResourceReadSignal,
    Signal,
    ToolResultSignal,
    signal_kind,
)
from shared.contracts.validation import validate_event
from tests.unit.event_bridge.signals import APP, OBSERVED, TOKEN, TRACE, base, one_of_each_kind


def _event(signal: Signal) -> EventEnvelope:
    outcome = map_signal(signal, subject_app_token=TOKEN)
    assert not isinstance(outcome, Rejected), outcome.reason
    # Every event the bridge writes must pass the edge's strict model.
    validate_event(msgspec.json.encode(outcome))
    return outcome


CASES = one_of_each_kind()


@pytest.mark.parametrize(("signal", "event_type"), CASES,
                         ids=[f"{signal_kind(s)}->{t}" for s, t in CASES])
def test_every_signal_kind_becomes_its_event_type(signal: Signal, event_type: str) -> None:
    event = _event(signal)
    assert event.payload.type == event_type
    assert event.header.source.app == APP and event.header.source.instance == "default"
    assert event.header.protocol == "amp/1.0" and event.header.method == "aurora/event"


@pytest.mark.parametrize(("signal", "event_type"), [c for c in CASES if signal_kind(c[0]) != "native_event"],
                         ids=[t for s, t in CASES if signal_kind(s) != "native_event"])
def test_a_platform_event_takes_its_id_and_time_from_the_signal(signal: Signal, event_type: str) -> None:
    event = _event(signal)
    assert event.header.message_id == signal.signal_id
    assert event.header.timestamp == OBSERVED


def test_lifecycle_fields() -> None:
    signal = LifecycleSignal(**base(instance="i2", trace=TRACE), state="process_exited",
                             reason="exit status 3", exit_code=3, detail={"restarts": 2})
    event = _event(signal)
    assert event.payload.type == "app.process_exited"
    assert event.payload.data == {"state": "process_exited", "reason": "exit status 3",
                                  "exit_code": 3, "detail": {"restarts": 2}}
    assert event.payload.subject is not None and event.payload.subject.id == f"{APP}/i2"
    assert event.payload.summary == f"app {APP} process exited: exit status 3"
    assert event.header.source.instance == "i2"
    assert event.header.trace == TRACE
    assert event.payload.actor is None  # nothing is invented


def test_list_changed_fields() -> None:
    event = _event(ListChangedSignal(**base(), list="prompts"))
    assert event.payload.type == "prompts.list_changed"
    assert event.payload.data == {"list": "prompts"}


def test_tool_result_fields() -> None:
    signal = ToolResultSignal(**base(), tool="im.polaris.qq.send_message", outcome="timeout",
                              status="timeout", duration_ms=30000.0, call_id="c1", run_id="r1",
                              task_id="t1", agent="welcome", session_id="group_1",
                              error={"code": "timeout", "message": "no answer"}, synthetic=True)
    event = _event(signal)
    assert event.payload.type == "tool.timeout"
    assert event.payload.session_id == "group_1"
    assert event.payload.synthetic is True
    assert event.payload.data == {
        "tool": "im.polaris.qq.send_message", "status": "timeout", "duration_ms": 30000.0,
        "call_id": "c1", "run_id": "r1", "task_id": "t1", "agent": "welcome",
        "error": {"code": "timeout", "message": "no answer"},
    }
    assert event.payload.subject is not None
    assert (event.payload.subject.kind, event.payload.subject.id) == ("tool", signal.tool)


def test_resource_read_fields() -> None:
    signal = ResourceReadSignal(**base(), uri="mem://notes/1", mime_type="text/plain", size=2,
                                text="hi")
    event = _event(signal)
    assert event.payload.type == "resource.read"
    assert event.payload.data == {"uri": "mem://notes/1", "mime_type": "text/plain", "size": 2,
                                  "text": "hi"}


def test_a_vendor_notification_is_kept_verbatim() -> None:
    params = {"seq": 7, "nested": {"a": [1, None]}, "text": "你好"}
    event = _event(NotificationSignal(**base(), method="notifications/acme/ping", params=params))
    assert event.payload.type == "notification.acme.ping"
    assert event.payload.data == {"method": "notifications/acme/ping", "params": params}
    assert event.payload.source_event_type == "notifications/acme/ping"
    assert event.payload.summary is None and event.payload.actor is None


@pytest.mark.parametrize(
    ("method", "event_type"),
    [
        ("notifications/acme/ping", "notification.acme.ping"),
        ("notifications/message", "notification.message"),
        ("acme/ping", "notification.acme.ping"),
        ("Notifications/ACME/Ping-Pong", "notification.notifications.acme.ping_pong"),
        ("notifications/a.b/c d", "notification.a_b.c_d"),
        ("notifications//x//", "notification.x"),
        ("notifications/", "notification.unknown"),
        ("", "notification.unknown"),
        ("notifications/进度", "notification.unknown"),
        ("notifications/1st", "notification.1st"),
    ],
)
def test_notification_methods_become_token_safe_types(method: str, event_type: str) -> None:
    assert notification_type(method) == event_type
    assert _event(NotificationSignal(**base(), method=method)).payload.type == event_type


def test_a_method_too_long_for_an_event_type_is_rejected() -> None:
    outcome = map_signal(NotificationSignal(**base(), method="notifications/" + "x" * 200),
                         subject_app_token=TOKEN)
    assert isinstance(outcome, Rejected) and "event type" in outcome.reason


@pytest.mark.parametrize(("signal", "event_type"), CASES,
                         ids=[f"{signal_kind(s)}->{t}" for s, t in CASES])
def test_a_signal_on_another_apps_subject_is_impersonation(signal: Signal, event_type: str) -> None:
    outcome = map_signal(signal, subject_app_token="im_other_app")
    assert isinstance(outcome, Rejected)
    assert "impersonation" in outcome.reason and APP in outcome.reason


@pytest.mark.parametrize(
    ("over", "named"),
    [
        ({"signal_id": ""}, "signal_id"),
        ({"signal_id": "two words"}, "signal_id"),
        ({"signal_id": "x" * 129}, "signal_id"),
        ({"app": "-dash"}, "app"),
        ({"app": "has space"}, "app"),
        ({"instance": ""}, "instance"),
        ({"observed_at": "yesterday"}, "observed_at"),
        ({"observed_at": "2026-06-19T12:00:00"}, "observed_at"),
    ],
)
def test_a_signal_whose_identity_cannot_head_an_event_is_rejected(over: dict[str, str],
                                                                  named: str) -> None:
    signal = ListChangedSignal(**base(**over), list="tools")
    outcome = map_signal(signal, subject_app_token=TOKEN)
    assert isinstance(outcome, Rejected) and named in outcome.reason


@pytest.mark.parametrize(
    "signal",
    [
        ToolResultSignal(**base(), tool="", outcome="failed", status="x", duration_ms=1.0),
        ResourceReadSignal(**base(), uri=""),
    ],
    ids=["tool", "uri"],
)
def test_an_empty_subject_id_is_rejected(signal: Signal) -> None:
    outcome = map_signal(signal, subject_app_token=TOKEN)
    assert isinstance(outcome, Rejected) and "empty" in outcome.reason
