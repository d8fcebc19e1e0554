"""App health records in the apps KV bucket, written by the service that observes them.

`proc.<app_token>.<instance>` — written by the supervisor (stdio apps only).
`sess.<app_token>.<instance>` — written by the gateway (every app).
`aurora apps` joins both. They survive an abnormal stop, so one can tell an app crash
(process) from a protocol failure (session) from a consumer failure (bridge/router stats).
"""

from __future__ import annotations

from typing import Literal

import msgspec

ProcessStatus = Literal["starting", "running", "restarting", "exited", "gave_up", "stopped"]
SessionStatus = Literal["connecting", "connected", "unavailable", "disconnected", "closed"]


class ProcessHealth(msgspec.Struct, frozen=True, kw_only=True):
    app: str
    instance: str
    name: str
    status: ProcessStatus
    command: list[str]
    pid: int | None = None
    generation: int = 0
    restarts: int = 0
    last_exit_code: int | None = None
    last_error: str | None = None
    updated_at: str


class SessionHealth(msgspec.Struct, frozen=True, kw_only=True):
    app: str
    instance: str
    name: str
    transport: str
    status: SessionStatus
    tools: int = 0
    server_name: str | None = None
    server_version: str | None = None
    # The MCP revision the session agreed on: "2026-07-28" is the stateless generation
    # (server/discover, no session), "2025-11-25" and older the initialize handshake.
    protocol: str | None = None
    last_error: str | None = None
    updated_at: str


def process_key(app_token: str, instance: str) -> str:
    return f"proc.{app_token}.{instance}"


def session_key(app_token: str, instance: str) -> str:
    return f"sess.{app_token}.{instance}"
