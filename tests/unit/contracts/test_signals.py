"""Signals: one tagged union, encoded and decoded by msgspec, errors naming the field."""

from __future__ import annotations

import contextlib
import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.contracts.envelope import Trace
from shared.contracts.signals import (
    SIGNAL_TYPES,
    LifecycleSignal,
    ListChangedSignal,
    NativeEventSignal,
    NotificationSignal,
    PlatformEventSignal,
    ResourceReadSignal,
    SignalBase,
    ToolResultSignal,
    decode_signal,
    encode_signal,
    signal_kind,
)

BASE = {"signal_id": "s-1", "app": "im.polaris.qq", "instance": "default",
        "observed_at": "2026-06-19T12:00:00+08:00"}
TRACE = Trace(traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")

ONE_OF_EACH: list[SignalBase] = [
    LifecycleSignal(**BASE, state="process_exited", reason="exit 3", exit_code=3,
                    detail={"stderr_tail": "boom"}, trace=TRACE),
    ListChangedSignal(**BASE, list="resources"),
    ToolResultSignal(**BASE, tool="im.polaris.qq.send_message", outcome="failed",
                     status="tool_error", duration_ms=12.5, call_id="c", run_id="r", task_id="t",
                     agent="a", session_id="g", error={"code": "E", "message": "no"},
                     synthetic=True),
    ResourceReadSignal(**BASE, uri="file:///a.txt", mime_type="text/plain", size=3, text="abc"),
    NotificationSignal(**BASE, method="notifications/acme/ping", params={"n": [1, 2]}),
    NativeEventSignal(**BASE, event={"payload": {"type": "message.received"}}),
    PlatformEventSignal(**{**BASE, "app": "aurora.gateway"}, type="approval.requested", data={"id": "apr-1"}),
]


def test_every_kind_is_covered() -> None:
    assert {type(s) for s in ONE_OF_EACH} == set(SIGNAL_TYPES)
    assert [signal_kind(s) for s in ONE_OF_EACH] == [
        "lifecycle", "list_changed", "tool_result", "resource_read", "notification", "native_event",
        "platform_event",
    ]


@pytest.mark.parametrize("signal", ONE_OF_EACH, ids=signal_kind)
def test_encode_decode_round_trip(signal: SignalBase) -> None:
    raw = encode_signal(signal)
    assert json.loads(raw)["kind"] == signal_kind(signal)
    assert decode_signal(raw) == signal
    assert encode_signal(decode_signal(raw)) == raw


@given(st.sampled_from(ONE_OF_EACH), st.text(max_size=20), st.text(max_size=20))
def test_round_trip_keeps_any_text(signal: SignalBase, signal_id: str, app: str) -> None:
    changed = msgspec.structs.replace(signal, signal_id=signal_id, app=app)
    assert decode_signal(encode_signal(changed)) == changed


def _raw(**fields: object) -> bytes:
    return json.dumps({**BASE, **fields}).encode()


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        (_raw(kind="teleport"), "kind"),
        (_raw(state="connected"), "kind"),  # no tag at all
        (_raw(kind="lifecycle", state="exploded"), "state"),
        (_raw(kind="lifecycle"), "state"),
        (_raw(kind="list_changed", list="widgets"), "list"),
        (_raw(kind="tool_result", tool="t", outcome="succeeded", status="ok", duration_ms="fast"),
         "duration_ms"),
        (_raw(kind="tool_result", tool="t", outcome="won", status="ok", duration_ms=1), "outcome"),
        (_raw(kind="resource_read", uri=5), "uri"),
        (_raw(kind="notification", method="x", params=[1]), "params"),
        (_raw(kind="native_event"), "event"),
        (json.dumps({"kind": "list_changed", "list": "tools", "app": "a",
                     "observed_at": "t"}).encode(), "signal_id"),
        (_raw(kind="list_changed", list="tools", app=7), "app"),
        (_raw(kind="list_changed", list="tools", trace="00-x"), "trace"),
    ],
)
def test_decode_errors_name_the_field(raw: bytes, named: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=named):
        decode_signal(raw)


@pytest.mark.parametrize("raw", [b"", b"\xff", b"[]", b"null", b"{", b'{"kind": "lifecycle",}'])
def test_garbage_is_a_decode_error(raw: bytes) -> None:
    with pytest.raises(msgspec.DecodeError):
        decode_signal(raw)


@given(st.binary(max_size=100))
def test_random_bytes_are_a_signal_or_a_decode_error(raw: bytes) -> None:
    with contextlib.suppress(msgspec.DecodeError):  # ValidationError is a DecodeError
        decode_signal(raw)


def test_unknown_fields_are_ignored_so_older_bridges_read_newer_signals() -> None:
    raw = _raw(kind="list_changed", list="tools", added_later={"x": 1})
    assert decode_signal(raw) == ListChangedSignal(**BASE, list="tools")
