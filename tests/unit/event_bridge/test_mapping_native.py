"""A native app's `aurora/event`: completed by the bridge, never allowed to speak for another."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from services.event_bridge.mapping import Rejected, map_signal
from shared.contracts.envelope import EventEnvelope
from shared.contracts.signals import NativeEventSignal
from shared.contracts.validation import RESERVED_EVENT_PREFIXES, validate_event
from tests.unit.event_bridge.signals import APP, OBSERVED, TOKEN, TRACE, native

NOW = datetime(2026, 6, 19, 4, 0, tzinfo=UTC)


def _map(signal: NativeEventSignal, token: str = TOKEN) -> EventEnvelope | Rejected:
    return map_signal(signal, subject_app_token=token, now=NOW)


def _event(signal: NativeEventSignal) -> EventEnvelope:
    outcome = _map(signal)
    assert not isinstance(outcome, Rejected), outcome.reason
    validate_event(msgspec.json.encode(outcome))
    return outcome


def _rejected(signal: NativeEventSignal, token: str = TOKEN) -> str:
    outcome = _map(signal, token)
    assert isinstance(outcome, Rejected), outcome
    return outcome.reason


def test_the_bridge_completes_what_the_app_left_out() -> None:
    signal = native({"payload": {"type": "message.received", "session_id": "group_1",
                                 "data": {"text": "你好"}}}, instance="bot-2", trace=TRACE)
    event = _event(signal)
    assert event.header.protocol == "amp/1.0" and event.header.method == "aurora/event"
    assert event.header.message_id == str(uuid.UUID(event.header.message_id))
    assert event.header.timestamp == OBSERVED
    assert event.header.source.app == APP and event.header.source.instance == "bot-2"
    assert event.header.trace == TRACE
    assert event.payload.type == "message.received"
    assert event.payload.session_id == "group_1"
    assert event.payload.data == {"text": "你好"}
    assert event.payload.actor is None  # no actor = sender assumption


def test_what_the_app_set_is_kept() -> None:
    body: dict[str, Any] = {
        "header": {"protocol": "amp/1.0", "method": "aurora/event", "message_id": "qq-msg-77",
                   "timestamp": "2026-06-19T11:59:59+08:00",
                   "source": {"app": APP, "instance": "default"},
                   "trace": {"traceparent": "00-aaaa", "tracestate": "k=v"}},
        "payload": {"type": "group.member_joined", "summary": "s", "data": {"member": "u1"},
                    "expire_at": "2026-06-20T00:00:00Z", "bot": "b", "workspace": "w",
                    "conversation": "c", "actor": {"id": "u1", "kind": "user"},
                    "subject": {"kind": "member", "id": "u1"}, "source_event_type": "GroupIncrease",
                    "raw_ref": "raw-1", "synthetic": True},
    }
    event = _event(native(body, trace=TRACE))
    assert msgspec.to_builtins(event) == {
        **body,
        "payload": {**body["payload"], "session_id": None},
    }


def test_the_same_signal_twice_gets_the_same_message_id() -> None:
    signal = native({"payload": {"type": "message.received"}})
    again = NativeEventSignal(signal_id=signal.signal_id, app=APP, observed_at=OBSERVED,
                              event={"payload": {"type": "message.received"}})
    first, second = _event(signal), _event(again)
    assert first.header.message_id == second.header.message_id
    other = native({"payload": {"type": "message.received"}})
    assert _event(other).header.message_id != first.header.message_id


def test_claiming_another_apps_identity_is_impersonation() -> None:
    reason = _rejected(native({"header": {"source": {"app": "im.polaris.wechat"}},
                               "payload": {"type": "message.received"}}))
    assert "impersonation" in reason and "im.polaris.wechat" in reason and APP in reason


def test_claiming_another_instance_is_impersonation() -> None:
    reason = _rejected(native({"header": {"source": {"app": APP, "instance": "other"}},
                               "payload": {"type": "message.received"}}, instance="bot-2"))
    assert "impersonation" in reason and "other" in reason


def test_a_signal_for_one_app_on_another_apps_subject_is_impersonation() -> None:
    reason = _rejected(native({"payload": {"type": "message.received"}}), token="im_polaris_wechat")
    assert "impersonation" in reason


@pytest.mark.parametrize("event_type", ["tool.succeeded", "tool.failed", "app.connected",
                                        "app.process_exited", "app", "tool"])
def test_reserved_types_are_refused_to_apps(event_type: str) -> None:
    reason = _rejected(native({"payload": {"type": event_type}}))
    assert "reserved" in reason and repr(event_type) in reason


@pytest.mark.parametrize("prefix", RESERVED_EVENT_PREFIXES)
def test_every_reserved_prefix_is_refused(prefix: str) -> None:
    assert "reserved" in _rejected(native({"payload": {"type": prefix + "x"}}))


def test_names_that_only_look_reserved_are_allowed() -> None:
    assert _event(native({"payload": {"type": "tools.list_changed_by_app"}})).payload.type
    assert _event(native({"payload": {"type": "application.opened"}})).payload.type


def test_an_expired_event_is_rejected_and_a_live_one_kept() -> None:
    reason = _rejected(native({"payload": {"type": "message.received",
                                           "expire_at": "2026-06-19T11:59:59+08:00"}}))
    assert "expired" in reason
    assert _event(native({"payload": {"type": "message.received",
                                      "expire_at": "2026-06-19T12:00:01+08:00"}}))


def test_expiry_is_judged_against_the_real_clock_by_default() -> None:
    signal = native({"payload": {"type": "message.received", "expire_at": "2001-01-01T00:00:00Z"}})
    outcome = map_signal(signal, subject_app_token=TOKEN)
    assert isinstance(outcome, Rejected) and "expired" in outcome.reason


@pytest.mark.parametrize(
    ("event", "named"),
    [
        ("just text", "JSON object"),
        ([{"payload": {}}], "JSON object"),
        ({"payload": {"type": "Message"}}, "payload.type"),
        ({}, "payload"),
        ({"header": {"message_id": "a b"}, "payload": {"type": "x"}}, "header.message_id"),
        ({"header": {"method": "tools/call"}, "payload": {"type": "x"}}, "header.method"),
        ({"header": {"timestamp": "now"}, "payload": {"type": "x"}}, "header.timestamp"),
        ({"payload": {"type": "x", "actor": {"id": "u"}}}, "payload.actor.kind"),
        ({"payload": {"type": "x", "unknown": 1}}, "payload.unknown"),
    ],
)
def test_an_invalid_native_event_is_rejected_naming_the_field(event: Any, named: str) -> None:
    assert named in _rejected(native(event))
