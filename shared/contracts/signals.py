"""Raw signals the supervisor, gateway and CLI publish on `amp.sig.<app>.<kind>` for the bridge.

A signal is what was observed, not yet an event: the event-bridge alone turns signals into AMP
events. `signal_id` is chosen once by the publisher and makes every later step idempotent (it
becomes `Nats-Msg-Id` on the signal stream and the event's `message_id` where the platform
produces the event).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from shared.contracts.envelope import Actor, Trace, decode_bounded

LifecycleState = Literal[
    "connected",
    "disconnected",
    "init_failed",
    "process_started",
    "process_exited",
    "process_restarting",
    "process_gave_up",
]
ListName = Literal["tools", "resources", "prompts"]
ToolOutcome = Literal["succeeded", "failed", "timeout"]


class SignalBase(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    signal_id: str
    app: str
    instance: str = "default"
    observed_at: str
    trace: Trace | None = None


class LifecycleSignal(SignalBase, frozen=True, kw_only=True, tag="lifecycle"):
    """An app's MCP session or process changed state."""

    state: LifecycleState
    reason: str | None = None
    exit_code: int | None = None
    detail: dict[str, Any] = msgspec.field(default_factory=dict)


class ListChangedSignal(SignalBase, frozen=True, kw_only=True, tag="list_changed"):
    """`notifications/{tools,resources,prompts}/list_changed` arrived from an app."""

    list: ListName


class ToolResultSignal(SignalBase, frozen=True, kw_only=True, tag="tool_result"):
    """A tool call finished (or timed out); the outcome, never the full output."""

    tool: str
    outcome: ToolOutcome
    status: str
    duration_ms: float
    call_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    agent: str | None = None
    session_id: str | None = None
    error: dict[str, Any] | None = None
    synthetic: bool = False


class ResourceReadSignal(SignalBase, frozen=True, kw_only=True, tag="resource_read"):
    """A resource was read through the gateway and the app's config asks to publish it."""

    uri: str
    mime_type: str | None = None
    size: int | None = None
    text: str | None = None


class NotificationSignal(SignalBase, frozen=True, kw_only=True, tag="notification"):
    """Any other notification an app sent, kept verbatim for conservative mapping."""

    method: str
    params: dict[str, Any] | None = None


class NativeEventSignal(SignalBase, frozen=True, kw_only=True, tag="native_event"):
    """An `aurora/event` notification's params, exactly as the app sent them."""

    event: Any


# Platform services name themselves `aurora.<service>`; only they may publish platform events,
# and each only its own namespaces: a runner cannot announce an approval, nor the gateway a task.
# An app's notifications that are protocol plumbing, not events: progress and cancellation
# belong to the request they concern; the acknowledgement opening a 2026-07-28
# `subscriptions/listen` stream is the stream's own. Every other notification becomes a signal.
PLUMBING_NOTIFICATIONS = frozenset({"notifications/progress", "notifications/cancelled",
                                    "notifications/subscriptions/acknowledged"})

PLATFORM_APP_PREFIX = "aurora."
GATEWAY_APP = "aurora.gateway"
RUNNER_APP = "aurora.runner"
SCHEDULER_APP = "aurora.scheduler"
EDGE_APP = "aurora.edge"  # mcp-edge: an A2A message (shared/contracts/a2a.py)
PLATFORM_EVENT_NAMESPACES: dict[str, tuple[str, ...]] = {
    GATEWAY_APP: ("approval.", "system."),
    RUNNER_APP: ("task.", "interaction.requested."),
    SCHEDULER_APP: ("schedule.",),
    EDGE_APP: ("a2a.",),
}
# What an app publishes when its user answers a question asked in the chat: the gateway decides
# the approval it answers, a runner resumes the task that asked.
INTERACTION_SUBMITTED = "interaction.submitted"


def platform_type_problem(app: str, event_type: str) -> str | None:
    """Why `app` may not publish a platform event of `event_type`, or None when it may."""
    if not app.startswith(PLATFORM_APP_PREFIX):
        return f"platform events come from {PLATFORM_APP_PREFIX}* services, not {app!r}"
    namespaces = PLATFORM_EVENT_NAMESPACES.get(app)
    if namespaces is None:
        return f"{app!r} publishes no platform events (known: {', '.join(sorted(PLATFORM_EVENT_NAMESPACES))})"
    if not (event_type + ".").startswith(namespaces):
        return f"{app!r} publishes only {', '.join(n + '*' for n in namespaces)} platform events, not {event_type!r}"
    return None


class PlatformEventSignal(SignalBase, frozen=True, kw_only=True, tag="platform_event"):
    """An event the platform itself produces (`approval.*`, `task.*`, `system.*` …). Only
    platform services publish these; the bridge checks the type is a platform one."""

    type: str
    summary: str | None = None
    session_id: str | None = None
    data: dict[str, Any] = msgspec.field(default_factory=dict)
    subject_kind: str | None = None
    subject_id: str | None = None
    synthetic: bool = False
    # Who the event is from, when the platform knows (the scheduler: `aurora.scheduler`, system).
    actor: Actor | None = None


Signal = (
    LifecycleSignal
    | ListChangedSignal
    | ToolResultSignal
    | ResourceReadSignal
    | NotificationSignal
    | NativeEventSignal
    | PlatformEventSignal
)

SIGNAL_TYPES: tuple[type[SignalBase], ...] = (
    LifecycleSignal,
    ListChangedSignal,
    ToolResultSignal,
    ResourceReadSignal,
    NotificationSignal,
    NativeEventSignal,
    PlatformEventSignal,
)

_decoder = msgspec.json.Decoder(Signal)
_encoder = msgspec.json.Encoder()


def signal_kind(signal: SignalBase) -> str:
    kind = type(signal).__struct_config__.tag
    assert isinstance(kind, str)
    return kind


def encode_signal(signal: SignalBase) -> bytes:
    return _encoder.encode(signal)


def decode_signal(data: bytes) -> Signal:
    """Decode a signal; raises msgspec.ValidationError / DecodeError naming the bad field."""
    return decode_bounded(_decoder, data)
