"""Admin request/reply endpoints as a NATS micro service: discoverable, with stats, JSON in/out.

Every endpoint lives at `<prefix>.admin.<area>.<verb>` and answers JSON. A handler error is
answered as `{"error": {"code", "message"}}` plus the micro error headers, never a stack trace.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from nats.aio.client import Client as NATS
from nats.micro import add_service
from nats.micro.request import Request
from nats.micro.service import Service

from shared.bus import is_jetstream_delivery
from shared.errors import AuroraError
from shared.logs import get_logger
from shared.subjects import Subjects

AdminHandler = Callable[[dict[str, Any]], Awaitable[Any]]

log = get_logger("aurora.admin")


class AdminRequestError(AuroraError):
    """A request an admin endpoint refuses; `code` is machine-readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def reply_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, default=str).encode()


def wrap_handler(verb: str, handler: AdminHandler) -> Callable[[Request], Awaitable[None]]:
    async def handle(request: Request) -> None:
        if is_jetstream_delivery(request_reply(request)):
            log.warning("stream delivery to an admin endpoint ignored", verb=verb, subject=request.subject)
            return
        try:
            body = json.loads(request.data) if request.data else {}
            if not isinstance(body, dict):
                raise AdminRequestError("invalid_request", "the request body must be a JSON object")
            result = await handler(body)
        except json.JSONDecodeError as exc:
            await _error(request, "invalid_request", f"the request body is not JSON: {exc}")
        except AdminRequestError as exc:
            await _error(request, exc.code, str(exc))
        except AuroraError as exc:
            await _error(request, "rejected", str(exc))
        except Exception as exc:  # an admin endpoint must answer, whatever happened
            log.exception("admin handler failed", verb=verb)
            await _error(request, "internal", f"{type(exc).__name__}: {exc}")
        else:
            await request.respond(reply_json(result))

    return handle


def request_reply(request: Request) -> str | None:
    """The reply subject of a micro request (nats-py keeps the message private)."""
    return getattr(getattr(request, "_msg", None), "reply", None)


async def _error(request: Request, code: str, message: str) -> None:
    await request.respond_error(
        code, message[:500], data=reply_json({"error": {"code": code, "message": message}})
    )


async def start_admin_service(
    nc: NATS,
    subjects: Subjects,
    *,
    name: str,
    area: str,
    version: str,
    endpoints: Mapping[str, AdminHandler],
    description: str = "",
) -> Service:
    """Serve `endpoints` (verb → handler) under `<prefix>.admin.<area>.<verb>`."""
    service = await add_service(nc, name=name, version=version, description=description)
    for verb, handler in endpoints.items():
        await service.add_endpoint(
            name=f"{area}-{verb}".replace("_", "-"),
            subject=subjects.admin(area, verb),
            handler=wrap_handler(verb, handler),
        )
    return service


async def admin_request(
    nc: NATS, subjects: Subjects, area: str, verb: str, body: Mapping[str, Any] | None = None,
    *, timeout: float = 5.0,
) -> Any:
    """Call an admin endpoint; an error reply raises AdminRequestError with its code."""
    msg = await nc.request(subjects.admin(area, verb), reply_json(dict(body or {})), timeout=timeout)
    value = json.loads(msg.data) if msg.data else None
    if isinstance(value, dict) and set(value) == {"error"} and isinstance(value["error"], dict):
        raise AdminRequestError(str(value["error"].get("code")), str(value["error"].get("message")))
    return value
