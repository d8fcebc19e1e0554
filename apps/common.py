"""Helpers shared by the example Aurora MCP apps: startup parameters and custom notifications."""

from __future__ import annotations

import json
import os
from typing import Any

import mcp_types as types
from mcp.server.session import ServerSession

STARTUP_ENV = "AURORA_APP_STARTUP"
EVENT_METHOD = "aurora/event"


class VendorNotification(types.Notification[dict[str, Any] | None, str]):
    """A server->client notification with an arbitrary method (e.g. `aurora/event`) and params."""

    params: dict[str, Any] | None = None


def load_startup(env_var: str = STARTUP_ENV) -> dict[str, Any]:
    """Parse the optional JSON object in `env_var`; absent or empty means `{}`."""
    raw = os.environ.get(env_var, "").strip()
    if not raw:
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError(f"{env_var} must be a JSON object, got {type(value).__name__}")
    return value


def event_params(
    event_type: str,
    data: dict[str, Any] | None = None,
    *,
    summary: str | None = None,
    session_id: str | None = None,
) -> dict[str, Any]:
    """Build the partial AMP envelope an app sends as `aurora/event` params (the platform fills the rest)."""
    payload: dict[str, Any] = {"type": event_type, "data": dict(data or {})}
    if summary is not None:
        payload["summary"] = summary
    if session_id is not None:
        payload["session_id"] = session_id
    return {"header": {"method": EVENT_METHOD}, "payload": payload}


async def send_notification(
    session: ServerSession,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    related_request_id: types.RequestId | None = None,
) -> None:
    """Send any notification; `related_request_id` pins it to that request's stream (Streamable HTTP)."""
    notification = VendorNotification(method=method, params=params)
    await session.send_notification(notification, related_request_id=related_request_id)  # type: ignore[arg-type]


async def send_event(session: ServerSession, params: dict[str, Any], **kwargs: Any) -> None:
    """Send an `aurora/event` notification whose params are a partial AMP envelope."""
    await send_notification(session, EVENT_METHOD, params, **kwargs)
