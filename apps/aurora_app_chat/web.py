"""The chat app's web side, served in the same process as its MCP stdio session (Starlette on uvicorn).

- `GET /` — the chat page (static HTML and a little plain JavaScript, polling the view below).
- `POST /session` — the page signs in as an IM user (`page_sessions`): a session cookie.
- `POST /events` — a JSON body (see `events.parse_body`) becomes the same `aurora/event` the
  `simulate_*` tools emit; 202 with the event, 4xx naming what to fix, 503 until the platform
  has connected (nothing is accepted that could not be emitted). Who the event is from comes
  from the caller's proof: the page's session cookie (its user), or a body signed with the
  webhook secret (`signature`: the body's `user_id`); anything else is 401.
- `GET /conversations/<id>` — what the page shows of a conversation (`conversation.conversation_view`).

Every request passes `shared.web_origin` first: a `Host` or `Origin` that is not the page's own
is 403. Logs go to stderr only: stdout is the MCP stream.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import Generator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shared.bounded_json import BadJson, loads_bounded
from shared.web_origin import GuardedApp, OriginPolicy

from .conversation import conversation_view
from .events import BadEvent, parse_body
from .page_sessions import COOKIE, PageSessions, SignInRefused
from .server import ChatApp, NotConnected
from .signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, SignatureRefused, Verifier

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8780
MAX_BODY = 64 * 1024
HOSTS_ENV = "AURORA_CHAT_ALLOWED_HOSTS"
ORIGINS_ENV = "AURORA_CHAT_ALLOWED_ORIGINS"
_STATIC = {"index.html": "text/html; charset=utf-8", "chat.js": "text/javascript; charset=utf-8",
           "chat.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"}


@dataclass(frozen=True)
class PageSettings:
    """Where the page listens and whom it answers (beyond loopback on its port); its webhook secret."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: frozenset[str] = frozenset()
    webhook_secret: str | None = None


def log(message: str, **fields: Any) -> None:
    print(json.dumps({"logger": "aurora_app_chat.web", "event": message, **fields}, ensure_ascii=False),
          file=sys.stderr, flush=True)


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


def _refused(status: int, code: str, message: str) -> JSONResponse:
    """A caller that did not prove who it speaks for: answered, and logged (stderr) with why."""
    log("event refused", status=status, code=code, reason=message)
    return _error(status, code, message)


def _static(name: str) -> Response:
    body = resources.files(__package__).joinpath("static", name).read_bytes()
    return Response(body, media_type=_STATIC[name], headers={"Cache-Control": "no-store"})


async def _read_body(request: Request) -> bytes | None:
    """The body, or None once it is larger than MAX_BODY (read no further)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _json_body(request: Request) -> tuple[bytes, Any] | Response:
    """The request's JSON value, or the error response to answer instead."""
    # JSON only: a form or text/plain post from another site's page (no CORS preflight) is refused.
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        return _error(415, "unsupported_media_type", f"send the body as application/json, not {media or 'nothing'}")
    raw = await _read_body(request)
    if raw is None:
        return _error(413, "too_large", f"a body is at most {MAX_BODY} bytes")
    try:
        return raw, loads_bounded(raw)
    except BadJson as exc:
        return _error(400, "bad_json", str(exc))


def _as_user(body: Any, user: str) -> Any:
    """A page session's body: its user is the session's; naming another is refused (None)."""
    if not isinstance(body, dict):
        return body  # parse_body says what is wrong with it
    named = body.get("user_id")
    if named is not None and named != user:
        return None
    return {**body, "user_id": user}


def web_app(chat: ChatApp, verifier: Verifier, sessions: PageSessions) -> Starlette:
    async def page(request: Request) -> Response:
        return _static("index.html")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        return _static(name) if name in _STATIC else _error(404, "not_found", f"no static file {name!r}")

    async def sign_in(request: Request) -> Response:
        read = await _json_body(request)
        if isinstance(read, Response):
            return read
        body = read[1]
        wanted = body.get("user_id") if isinstance(body, dict) else None
        if not isinstance(body, dict) or set(body) - {"user_id"} or not isinstance(wanted, str | None):
            return _error(422, "invalid_sign_in", 'send {"user_id": "<id>"} (or {} to keep or get one)')
        try:
            token, user = sessions.sign_in(request.cookies.get(COOKIE), wanted)
        except SignInRefused as exc:
            return _refused(409, exc.code, str(exc)) if exc.code == "user_taken" else _error(422, exc.code, str(exc))
        reply = JSONResponse({"user_id": user})
        reply.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return reply

    async def post_event(request: Request) -> Response:
        read = await _json_body(request)
        if isinstance(read, Response):
            return read
        raw, body = read
        signed = request.headers.get(SIGNATURE_HEADER) is not None
        held: str | None = None
        if signed:
            try:
                held = verifier.verify(request.headers.get(SIGNATURE_HEADER),
                                       request.headers.get(TIMESTAMP_HEADER), raw)
            except SignatureRefused as exc:
                return _refused(401, "bad_signature", str(exc))
        else:
            user = sessions.user_of(request.cookies.get(COOKIE))
            if user is None:
                return _refused(401, "not_authenticated",
                                "say who you are: post from the chat page (it signs in as a user), or sign the body "
                                f"with the webhook secret ({SIGNATURE_HEADER} and {TIMESTAMP_HEADER})")
            body = _as_user(body, user)
            if body is None:
                return _refused(403, "not_your_user", f"this page is signed in as {user!r}: it may not post as "
                                "another user (sign in as them, or send a signed webhook body)")
        try:
            emission = parse_body(body)
        except BadEvent as exc:
            if held is not None:
                verifier.release(held)
            return _error(422, "invalid_event", str(exc),
                          problems=[{"field": field, "problem": problem} for field, problem in exc.problems])
        try:
            params = await chat.emit(emission)
        except NotConnected as exc:
            if held is not None:
                verifier.release(held)
            return JSONResponse({"error": {"code": "not_connected", "message": str(exc)}}, status_code=503,
                                headers={"Retry-After": "1"})
        if signed and emission.actor[1] == "user":
            sessions.webhook_spoke_for(emission.actor[0])
        return JSONResponse({"accepted": True, "type": emission.event_type, **emission.ids, "event": params},
                            status_code=202)

    async def get_conversation(request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        return JSONResponse(conversation_view(conversation_id, chat.received.records(), chat.sent.records()))

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "connected": chat.session is not None})

    return Starlette(routes=[
        Route("/", page, methods=["GET"]),
        Route("/static/{name}", asset, methods=["GET"]),
        Route("/session", sign_in, methods=["POST"]),
        Route("/events", post_event, methods=["POST"]),
        Route("/conversations/{conversation_id}", get_conversation, methods=["GET"]),
        Route("/healthz", health, methods=["GET"]),
    ])


class WebServer(uvicorn.Server):
    """uvicorn without its signal handlers: the app's lifetime is its stdio session, and a
    SIGTERM from the supervisor must end the whole process as before."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (0: a free port); OSError when it cannot be had. Listening
    before uvicorn starts, so a client that read the logged address is queued, never refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def page_policy(settings: PageSettings, port: int) -> OriginPolicy:
    """Loopback on the bound port, and what the settings add."""
    return OriginPolicy.build(port, hosts=settings.allowed_hosts, origins=settings.allowed_origins,
                              hosts_setting=HOSTS_ENV, origins_setting=ORIGINS_ENV)


class ChatPage:
    """The page's server on its bound socket: `run` until `stop`."""

    def __init__(self, chat: ChatApp, sock: socket.socket, settings: PageSettings) -> None:
        self.sock = sock
        host, port = sock.getsockname()[:2]
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
        self.policy = page_policy(settings, port)
        app = web_app(chat, Verifier(settings.webhook_secret), PageSessions())
        guarded = GuardedApp(app, self.policy, on_refusal=lambda code, why: log("request refused", code=code,
                                                                                reason=why))
        config = uvicorn.Config(guarded, log_config=None, access_log=False, lifespan="off",
                                timeout_graceful_shutdown=2, log_level="warning")
        self.server = WebServer(config)

    async def run(self) -> None:
        await self.server.serve(sockets=[self.sock])

    def stop(self) -> None:
        self.server.should_exit = True


def open_page(chat: ChatApp, settings: PageSettings) -> ChatPage | None:
    """The page on the settings' host and port, logged with its address and the hosts it answers;
    None (logged with what to do, the MCP side goes on without it) when the address cannot be bound."""
    try:
        sock = bind(settings.host, settings.port)
    except OSError as exc:
        log("chat page not served", host=settings.host, port=settings.port, error=str(exc),
            fix="free the port or choose another with --web-port / CHAT_WEB_PORT (0 = any free port)")
        return None
    page = ChatPage(chat, sock, settings)
    log("chat page serving", url=page.url, allowed_hosts=sorted(page.policy.hosts),
        signed_webhook=settings.webhook_secret is not None)
    return page
