"""Admin request/reply endpoints as a NATS micro service: discoverable, with stats, JSON in/out.

Every endpoint lives at `<prefix>.admin.<area>.<verb>` and answers JSON. A handler error is
answered as `{"error": {"code", "message"}}` plus the micro error headers, never a stack trace.
Each is also served at `….u.<name>` for person `<name>` (shared/people.py): the handler reads who
sent it with `current_caller()`, and an `authorize` check may refuse it (`not_permitted`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from nats.aio.client import Client as NATS
from nats.micro import add_service
from nats.micro.request import Request
from nats.micro.service import Service

from shared.contracts.people import PERSON_TOKEN
from shared.contracts.subjects import Subjects
from shared.errors import AuroraError
from shared.nats.refusals import PublishRefused, refusals_of
from shared.nats.request_guard import refused_message
from shared.observability.logs import get_logger
from shared.people import Caller, reset_caller, set_caller

AdminHandler = Callable[[dict[str, Any]], Awaitable[Any]]
# (caller, area, verb) → why the caller may not (None: they may)
Authorize = Callable[[Caller, str, str], Awaitable[str | None]]

log = get_logger("aurora.admin")


class AdminRequestError(AuroraError):
    """A request an admin endpoint refuses; `code` is machine-readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def reply_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, default=str).encode()


def wrap_handler(verb: str, handler: AdminHandler, *, area: str = "",
                 authorize: Authorize | None = None) -> Callable[[Request], Awaitable[None]]:
    async def handle(request: Request) -> None:
        if refused_message(request._msg, endpoint=f"admin.{area}.{verb}"):  # nats.micro keeps it private
            return
        caller = Caller.of_subject(request.subject)
        token = set_caller(caller)
        try:
            body = json.loads(request.data) if request.data else {}
            if not isinstance(body, dict):
                raise AdminRequestError("invalid_request", "the request body must be a JSON object")
            refusal = await authorize(caller, area, verb) if authorize is not None else None
            if refusal is not None:
                log.warning("admin request refused", area=area, verb=verb, person=caller.person, reason=refusal)
                raise AdminRequestError("not_permitted", refusal)
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
        finally:
            reset_caller(token)

    return handle


def person_endpoint_subject(subject: str) -> str:
    """The subject a person's requests for `subject` come on (`….u.<name>`)."""
    return f"{subject}.{PERSON_TOKEN}.*"


async def add_admin_endpoint(service: Service, subjects: Subjects, area: str, verb: str, handler: AdminHandler,
                             authorize: Authorize | None = None) -> None:
    """Serve `<p>.admin.<area>.<verb>` and its people's form `….u.*` with one handler."""
    subject = subjects.admin(area, verb)
    wrapped = wrap_handler(verb, handler, area=area, authorize=authorize)
    name = f"{area}-{verb}".replace("_", "-")
    await service.add_endpoint(name=name, subject=subject, handler=wrapped)
    await service.add_endpoint(name=f"{name}-person", subject=person_endpoint_subject(subject), handler=wrapped)


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
    version: str,
    areas: Mapping[str, Mapping[str, AdminHandler]],
    description: str = "",
    authorize: Authorize | None = None,
) -> Service:
    """One process's micro service: each area's endpoints (verb → handler) under
    `<prefix>.admin.<area>.<verb>` (and `….u.*`).

    One service per process, whatever the number of areas it serves: a discovery request
    (`$SRV.PING/INFO/STATS`) then gets one answer from each process. With a service per area,
    one connection answered the same request several times, and nats-server's
    `allow_responses` (one reply per request received) refused the extra answers, at times all
    of them: the scheduler was missing from `aurora health` on a secured installation."""
    service = await add_service(nc, name=name, version=version, description=description)
    for area, endpoints in areas.items():
        for verb, handler in endpoints.items():
            await add_admin_endpoint(service, subjects, area, verb, handler, authorize)
    return service


async def admin_request(
    nc: NATS, subjects: Subjects, area: str, verb: str, body: Mapping[str, Any] | None = None,
    *, timeout: float = 5.0,
) -> Any:
    """Call an admin endpoint; an error reply raises AdminRequestError with its code, and so does
    nats-server refusing this identity the request (`not_permitted`, on a connection it watches:
    shared/nats/refusals.py)."""
    subject = subjects.requested(subjects.admin(area, verb))
    payload = reply_json(dict(body or {}))
    refusals = refusals_of(nc)
    try:
        msg = (await nc.request(subject, payload, timeout=timeout) if refusals is None
               else await refusals.request(nc, subject, payload, timeout=timeout))
    except PublishRefused as exc:
        raise AdminRequestError("not_permitted", f"{exc}: your roles do not allow {area}.{verb}") from exc
    value = json.loads(msg.data) if msg.data else None
    if isinstance(value, dict) and set(value) == {"error"} and isinstance(value["error"], dict):
        raise AdminRequestError(str(value["error"].get("code")), str(value["error"].get("message")))
    return value
