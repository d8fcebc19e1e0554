"""The console's HTTP side (Starlette): sign-in and sign-out, the page, its sections as fragments,
live events as server-sent events, and the one thing it changes — an approval's decision (a dry
run dispatches nothing). Everything but the sign-in form and the static files needs a signed-in
session (sessions.py), and acts as its person.

- `GET /`, `GET /tasks/<id>` — whole pages, every section rendered on the server (the sign-in
  form when not signed in);
- `POST /sign-in` (`{"name", "password"}` or `{"creds": "<file text>"}`), `POST /sign-out`;
- `GET /part/<name>`, `GET /part/task/<id>` — one section again (the page's script refreshes them);
- `GET /events/stream` — `ready` once subscribed, then one `amp` message per event (JSON);
- `POST /approvals/<id>/grant|deny` (`{"note"}`), `POST /dry-run` (`{"event": "<JSON text>"}`) —
  answered with an HTML fragment; 4xx with a fragment naming what to fix.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from markupsafe import Markup
from nats.errors import Error as NatsError
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from aurora_cli.commands.route import complete_event
from aurora_cli.console import views
from aurora_cli.console.guard import TOKEN_HEADER, host_problem, origin_problem, token_problem
from aurora_cli.console.platform import Answer, Platform
from aurora_cli.console.sessions import COOKIE, Session, Sessions, SignInRefused, sign_in_from
from aurora_cli.output import CliError

MAX_BODY = 256 * 1024
PARTS = ("approvals", "tasks", "bindings", "services", "apps", "systems", "tools")
_STATIC = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8",
           "favicon.svg": "image/svg+xml"}
# No inline script or style, nothing from elsewhere, no framing: escaped text stays text even
# if a template ever missed an escape.
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


OPEN_PATHS = ("/sign-in",)  # a POST that needs no session (it makes one)
PAGES = ("/", "/tasks/")  # pages that show the sign-in form when not signed in; the rest answer 401


@dataclass(frozen=True)
class ConsoleConfig:
    nats_url: str
    allowed_hosts: frozenset[str] | None  # None: any Host (--allow-remote)


class Guard(BaseHTTPMiddleware):
    """Host on every request, Origin and the session's token on every POST (see guard.py), a
    session for everything but the sign-in form and static files, and the headers."""

    def __init__(self, app: Any, config: ConsoleConfig, sessions: Sessions) -> None:
        super().__init__(app)
        self.config = config
        self.sessions = sessions

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await self.checked(request, call_next)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    async def checked(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        host = request.headers.get("host")
        problem = host_problem(host, self.config.allowed_hosts)
        if problem is not None:
            return PlainTextResponse(f"refused: {problem}", status_code=403)
        session = self.sessions.find(request.cookies.get(COOKIE))
        request.state.session = session
        path = request.url.path
        if request.method not in ("GET", "HEAD"):
            problem = origin_problem(origin=request.headers.get("origin"), host_header=host,
                                     content_type=request.headers.get("content-type"))
            if problem is None and path not in OPEN_PATHS:
                problem = token_problem(request.headers.get(TOKEN_HEADER), session.csrf if session else None)
            if problem is not None:
                return PlainTextResponse(f"refused: {problem}", status_code=401 if session is None else 403)
        elif session is None and not path.startswith("/static/"):
            if path == "/" or path.startswith("/tasks/"):
                return HTMLResponse(views.sign_in_page(nats_url=self.config.nats_url))
            return PlainTextResponse("not signed in: sign in on the console's page first", status_code=401)
        return await call_next(request)


def _fragment(html: Markup, status: int = 200) -> HTMLResponse:
    return HTMLResponse(str(html), status_code=status)


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise ValueError(f"the request body is larger than {MAX_BODY} bytes")
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise ValueError(f"the request body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    return body


def readers(platform: Platform) -> dict[str, Callable[[], Awaitable[Answer]]]:
    return {
        "approvals": platform.approvals, "tasks": platform.tasks, "bindings": platform.bindings,
        "apps": platform.apps, "systems": platform.systems, "tools": platform.tools,
        "services": lambda: platform.services(datetime.now(UTC)),
    }


def session_of(request: Request) -> Session:
    """The request's session; the Guard let no request without one reach a route that asks."""
    session: Session | None = request.state.session
    if session is None:
        raise RuntimeError("a route that needs a session was reached without one")
    return session


def console_app(sessions: Sessions, config: ConsoleConfig) -> Starlette:
    async def render_part(platform: Platform, name: str) -> Markup:
        answer = await readers(platform)[name]()
        return views.part(name, answer.value, answer.error)

    def who(session: Session) -> dict[str, Any]:
        return {"token": session.csrf, "person": session.person, "roles": session.roles,
                "roles_note": session.roles_note, "nats_url": config.nats_url}

    async def index(request: Request) -> Response:
        session = session_of(request)
        rendered = await asyncio.gather(*(render_part(session.platform, name) for name in PARTS))
        return HTMLResponse(views.page(parts=dict(zip(PARTS, rendered, strict=True)), **who(session)))

    async def one_part(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in PARTS:
            return PlainTextResponse(f"no section {name!r}; known: {', '.join(PARTS)}", status_code=404)
        return _fragment(await render_part(session_of(request).platform, name))

    async def task_fragment(platform: Platform, task_id: str) -> Markup:
        answer = await platform.task(task_id)
        return views.task_part(task_id, answer.value, answer.error)

    async def task_page(request: Request) -> Response:
        session, task_id = session_of(request), request.path_params["task_id"]
        return HTMLResponse(views.task_page(task_id, await task_fragment(session.platform, task_id), **who(session)))

    async def task_part(request: Request) -> Response:
        return _fragment(await task_fragment(session_of(request).platform, request.path_params["task_id"]))

    async def sign_in(request: Request) -> Response:
        try:
            session = await sessions.sign_in(sign_in_from(await _json_body(request)))
        except (ValueError, SignInRefused) as exc:
            return _fragment(views.signed_in(None, str(exc)), 401)
        response = _fragment(views.signed_in(session.person, None))
        response.set_cookie(COOKIE, session.id, httponly=True, samesite="strict", path="/")
        return response

    async def sign_out(request: Request) -> Response:
        await sessions.sign_out(session_of(request))
        response = PlainTextResponse("signed out")
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    async def decide(request: Request) -> Response:
        approval_id, verb = request.path_params["approval_id"], request.path_params["verb"]
        if verb not in ("grant", "deny"):
            return _fragment(views.decision(approval_id, None, f"unknown decision {verb!r}: grant or deny"), 404)
        try:
            note = (await _json_body(request)).get("note")
        except ValueError as exc:
            return _fragment(views.decision(approval_id, None, str(exc)), 400)
        if note is not None and not isinstance(note, str):
            return _fragment(views.decision(approval_id, None, "note must be a string"), 400)
        answer = await session_of(request).platform.decide(verb, approval_id, note.strip() if note else None)
        return _fragment(views.decision(approval_id, answer.value, answer.error), decision_status(answer))

    async def dry_run(request: Request) -> Response:
        try:
            text = (await _json_body(request)).get("event")
            if not isinstance(text, str) or not text.strip():
                raise ValueError("paste an event as JSON (an envelope, or just its payload with a type)")
            try:
                doc = json.loads(text)
            except ValueError as exc:
                raise ValueError(f"the event is not JSON: {exc}") from exc
            event = complete_event(doc, "the event")
        except (ValueError, CliError) as exc:
            return _fragment(views.dry_run(None, str(exc)), 400)
        answer = await session_of(request).platform.dry_run(event)
        source = event["header"]["source"]
        note = None if has_source(doc) else f"header.source not given: the dry run used app {source['app']}"
        return _fragment(views.dry_run(answer.value, answer.error, note), 200 if answer.error is None else 502)

    async def stream(request: Request) -> Response:
        return EventSourceResponse(live_events(session_of(request).platform), ping=15, send_timeout=30)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return PlainTextResponse(f"no static file {name!r}", status_code=404)
        body = resources.files("aurora_cli.console").joinpath("static", name).read_bytes()
        return Response(body, media_type=_STATIC[name])

    routes = [
        Route("/", index), Route("/part/task/{task_id}", task_part), Route("/part/{name}", one_part),
        Route("/tasks/{task_id}", task_page), Route("/approvals/{approval_id}/{verb}", decide, methods=["POST"]),
        Route("/dry-run", dry_run, methods=["POST"]), Route("/events/stream", stream),
        Route("/static/{name}", static), Route("/sign-in", sign_in, methods=["POST"]),
        Route("/sign-out", sign_out, methods=["POST"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(Guard, config=config, sessions=sessions)])


def decision_status(answer: Answer) -> int:
    """200 decided; 403 when the gateway says the person may not; 409 any other refusal."""
    if answer.error is None:
        return 200
    return 403 if answer.error.startswith("not_permitted") else 409


def has_source(doc: Any) -> bool:
    header = doc.get("header") if isinstance(doc, dict) else None
    return isinstance(header, dict) and "source" in header


async def live_events(platform: Platform) -> AsyncIterator[ServerSentEvent]:
    """`ready` once the consumer exists, then each event; a failure is said once (`trouble`) and
    the stream ends, so the browser's EventSource reconnects after `retry` milliseconds."""
    try:
        async for item in platform.events():
            if item is None:
                yield ServerSentEvent(event="ready", data="{}")
                continue
            yield ServerSentEvent(event="amp", data=json.dumps(views.event_item(*item), ensure_ascii=False))
    except (CliError, NatsError, OSError, TimeoutError) as exc:
        yield ServerSentEvent(event="trouble", data=json.dumps({"error": str(exc) or type(exc).__name__}),
                              retry=3000)
