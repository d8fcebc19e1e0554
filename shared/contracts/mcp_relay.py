"""MCP over NATS between the supervisor (which owns app processes) and the gateway (which owns
MCP sessions).

- `<p>.mcp.<app>.<instance>.c2s` — one JSON-RPC message per NATS message, gateway → app stdin.
- `<p>.mcp.<app>.<instance>.s2c` — one JSON-RPC message per NATS message, app stdout → gateway.
  Framing is preserved: one stdout line is one message, bytes untouched (no trailing newline).
- `<p>.mcp.<app>.<instance>.proc` — `ProcessEvent`s from the supervisor: the gateway
  re-initializes its session when a new process generation starts, and fails calls in flight
  at once when the process exits.
- `<p>.mcp.<app>.<instance>.sess` — `SessionEvent`s from the gateway: on shutdown the
  supervisor stops an app's process only after its session was closed (or a bounded wait).
- `<p>.mcp.<app>.<instance>.rcpt` — the gateway's receipts: an empty message whose
  `RECEIPT_HEADER` names an event of the app's the gateway stored, so the supervisor stops
  sending it again. Not MCP traffic, so not on `c2s`, which carries only what the app reads.

All five are core NATS: the session is live or it is not; durability lives in the streams.
"""

from __future__ import annotations

from typing import Literal

import msgspec

ProcessState = Literal["started", "exited", "restarting", "gave_up", "stopped"]
SessionState = Literal["connected", "closed", "unavailable"]


class ProcessEvent(msgspec.Struct, frozen=True, kw_only=True):
    app: str
    instance: str
    state: ProcessState
    generation: int
    pid: int | None = None
    exit_code: int | None = None
    reason: str | None = None
    at: str


class SessionEvent(msgspec.Struct, frozen=True, kw_only=True):
    app: str
    instance: str
    state: SessionState
    reason: str | None = None
    at: str


class RestartRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Gateway → supervisor (`<p>.admin.supervisor.restart`): restart an app's process, e.g.
    because it refused a second `initialize`."""

    app: str
    instance: str = "default"
    reason: str


_encoder = msgspec.json.Encoder()


def encode(value: msgspec.Struct) -> bytes:
    return _encoder.encode(value)


def decode_process_event(data: bytes) -> ProcessEvent:
    return msgspec.json.decode(data, type=ProcessEvent)


def decode_session_event(data: bytes) -> SessionEvent:
    return msgspec.json.decode(data, type=SessionEvent)
