"""Signal builders for the bridge's tests: one valid signal of each kind, and hypothesis strategies."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from shared.contracts.envelope import Trace
from shared.contracts.signals import (
    LifecycleSignal,
    ListChangedSignal,
    NativeEventSignal,
    NotificationSignal,
    PlatformEventSignal,
    ResourceReadSignal,
    Signal,
    ToolResultSignal,
)
from tests.unit.contracts.strategies import app_ids, json_objects, timestamps

APP = "im.polaris.qq"
TOKEN = "im_polaris_qq"
OBSERVED = "2026-06-19T12:00:00.000+08:00"
TRACE = Trace(traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")


def base(**over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"signal_id": str(uuid.uuid4()), "app": APP, "instance": "default",
                              "observed_at": OBSERVED}
    fields.update(over)
    return fields


def native(event: Any, **over: Any) -> NativeEventSignal:
    return NativeEventSignal(**base(**over), event=event)


def one_of_each_kind(app: str = APP) -> list[tuple[Signal, str]]:
    """(signal, expected event type) covering every kind and every variant of each kind."""
    cases: list[tuple[Signal, str]] = []
    for state in ("connected", "disconnected", "init_failed", "process_started",
                  "process_exited", "process_restarting", "process_gave_up"):
        cases.append((LifecycleSignal(**base(app=app), state=state, reason="r"), f"app.{state}"))
    for name in ("tools", "resources", "prompts"):
        cases.append((ListChangedSignal(**base(app=app), list=name), f"{name}.list_changed"))
    for outcome in ("succeeded", "failed", "timeout"):
        cases.append((ToolResultSignal(**base(app=app), tool=f"{app}.send", outcome=outcome,
                                       status="ok", duration_ms=3.0), f"tool.{outcome}"))
    cases.append((ResourceReadSignal(**base(app=app), uri="file:///x"), "resource.read"))
    cases.append((NotificationSignal(**base(app=app), method="notifications/acme/ping",
                                     params={"n": 1}), "notification.acme.ping"))
    cases.append((native({"payload": {"type": "message.received", "data": {"text": "你好"}}},
                         app=app), "message.received"))
    return cases


def platform_event(type_: str = "approval.requested", app: str = "aurora.gateway") -> PlatformEventSignal:
    """A platform service's own event (only `aurora.*` services may publish these)."""
    return PlatformEventSignal(**base(app=app), type=type_, summary="approve?", data={"id": "apr-1"},
                               subject_kind="approval", subject_id="apr-1")


_text = st.text(max_size=12)
_header = {
    "signal_id": _text | st.uuids().map(str),
    "app": app_ids | _text,
    "instance": st.just("default") | _text,
    "observed_at": timestamps | _text,
    "trace": st.none() | st.builds(Trace, traceparent=st.none() | _text),
}
_native_events = st.fixed_dictionaries(
    {"payload": st.fixed_dictionaries(
        {"type": st.sampled_from(["message.received", "tool.succeeded", "app.x", "Bad", "group.x"]),
         "data": json_objects},
        optional={"expire_at": timestamps, "session_id": _text},
    )},
    optional={"header": st.fixed_dictionaries(
        {}, optional={"message_id": _text, "timestamp": timestamps | _text,
                      "source": st.fixed_dictionaries({"app": app_ids})})},
)
any_signals: st.SearchStrategy[Signal] = st.one_of(
    st.builds(LifecycleSignal, state=st.sampled_from(["connected", "process_exited"]),
              reason=st.none() | _text, exit_code=st.none() | st.integers(-255, 255),
              detail=json_objects, **_header),
    st.builds(ListChangedSignal, list=st.sampled_from(["tools", "resources", "prompts"]), **_header),
    st.builds(ToolResultSignal, tool=_text, outcome=st.sampled_from(["succeeded", "timeout"]),
              status=_text, duration_ms=st.floats(0, 1e6), error=st.none() | json_objects,
              **_header),
    st.builds(ResourceReadSignal, uri=_text, text=st.none() | _text, **_header),
    st.builds(NotificationSignal, method=st.text(max_size=200),
              params=st.none() | json_objects, **_header),
    st.builds(NativeEventSignal, event=_native_events | json_objects, **_header),
    st.builds(PlatformEventSignal,
              type=st.sampled_from(["approval.requested", "task.done", "message.received", "Bad"]),
              subject_kind=st.none() | _text, subject_id=st.none() | _text, data=json_objects,
              **{**_header, "app": st.sampled_from(["aurora.gateway", "aurora.", "im.x"]) | _header["app"]}),
)
