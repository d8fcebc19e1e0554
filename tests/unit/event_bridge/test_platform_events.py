"""Platform events (`approval.*`, `task.*`, `system.*`) pass the bridge only from platform services,
each from the service whose namespace it is."""

from __future__ import annotations

from services.event_bridge.mapping import Rejected, map_signal
from shared.contracts.signals import PlatformEventSignal

BASE = {"signal_id": "s-9", "instance": "default", "observed_at": "2026-06-19T12:00:00+08:00"}


def test_platform_event_becomes_an_event_with_its_type_and_subject() -> None:
    signal = PlatformEventSignal(**BASE, app="aurora.gateway", type="approval.requested", summary="approve?",
                                 session_id="g1", data={"approval_id": "apr-1"},
                                 subject_kind="approval", subject_id="apr-1")
    event = map_signal(signal, subject_app_token="aurora_gateway")
    assert not isinstance(event, Rejected)
    assert event.payload.type == "approval.requested"
    assert event.payload.data == {"approval_id": "apr-1"}
    assert event.payload.subject is not None and event.payload.subject.id == "apr-1"
    assert event.header.message_id == "s-9"
    assert event.header.source.app == "aurora.gateway"


def test_an_app_cannot_publish_platform_events() -> None:
    signal = PlatformEventSignal(**BASE, app="im.polaris.qq", type="approval.granted")
    outcome = map_signal(signal, subject_app_token="im_polaris_qq")
    assert isinstance(outcome, Rejected) and "platform events" in outcome.reason


def test_a_platform_service_cannot_publish_app_event_types() -> None:
    signal = PlatformEventSignal(**BASE, app="aurora.gateway", type="message.received")
    outcome = map_signal(signal, subject_app_token="aurora_gateway")
    assert isinstance(outcome, Rejected) and "not a platform event type" in outcome.reason


def test_each_platform_service_publishes_only_its_own_namespaces() -> None:
    allowed = [("aurora.gateway", "approval.granted"), ("aurora.gateway", "system.disabled"),
               ("aurora.runner", "task.succeeded"), ("aurora.runner", "interaction.requested.choice")]
    for app, type_ in allowed:
        outcome = map_signal(PlatformEventSignal(**BASE, app=app, type=type_),
                             subject_app_token=app.replace(".", "_"))
        assert not isinstance(outcome, Rejected), (app, type_, outcome)
    refused = [("aurora.runner", "approval.granted", "only task.*"),
               ("aurora.gateway", "task.succeeded", "only approval.*"),
               ("aurora.router", "route.unmatched", "publishes no platform events")]
    for app, type_, why in refused:
        outcome = map_signal(PlatformEventSignal(**BASE, app=app, type=type_),
                             subject_app_token=app.replace(".", "_"))
        assert isinstance(outcome, Rejected) and why in outcome.reason, (app, type_, outcome)


def test_an_event_continues_its_signals_trace_or_starts_one_of_its_own() -> None:
    from services.event_bridge.mapping import with_trace
    from shared.observability.trace_context import root_trace

    event = map_signal(PlatformEventSignal(**BASE, app="aurora.gateway", type="approval.requested"),
                       subject_app_token="aurora_gateway")
    assert not isinstance(event, Rejected) and event.header.trace is None
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert with_trace(event, {"traceparent": parent}).header.trace.traceparent == parent  # type: ignore[union-attr]
    rooted = with_trace(event, None).header.trace
    assert rooted == root_trace(event.header.message_id)
    assert with_trace(with_trace(event, None), {"traceparent": parent}).header.trace == rooted  # its own wins
