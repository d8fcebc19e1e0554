"""The chat app's web side, served in the same process as its MCP stdio session (Starlette on uvicorn).

- `GET /` — the chat page (static HTML and a little plain JavaScript, polling the view below).
- `POST /events` — a JSON body (see `events.parse_body`) becomes the same `aurora/event` the
  `simulate_*` tools emit; 202 with the event, 4xx naming what to fix, 503 until the platform
  has connected (nothing is accepted that could not be emitted).
- `GET /conversations/<id>` — what the page shows of a conversation (`conversation.conversation_view`).

Logs go to stderr only: stdout is the MCP stream.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import Generator
from importlib import resources
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .conversation import conversation_view
from .events import BadEvent, parse_body
from .server import ChatApp, NotConnected

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8780
MAX_BODY = 64 * 1024
_STATIC = {"index.html": "text/html; charset=utf-8", "chat.js": "text/javascript; charset=utf-8",
           "chat.css": "text/css; charset=utf-8"}


def log(message: str, **fields: Any) -> None:
    print(json.dumps({"logger": "aurora_app_chat.web", "event": message, **fields}, ensure_ascii=False),
          file=sys.stderr, flush=True)


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


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


def web_app(chat: ChatApp) -> Starlette:
    async def page(request: Request) -> Response:
        return _static("index.html")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        return _static(name) if name in _STATIC else _error(404, "not_found", f"no static file {name!r}")

    async def post_event(request: Request) -> Response:
        # JSON only: a form or text/plain post from another site's page (no CORS preflight) is refused.
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            return _error(415, "unsupported_media_type",
                          f"send the event as application/json, not {media or 'nothing'}")
        raw = await _read_body(request)
        if raw is None:
            return _error(413, "too_large", f"an event body is at most {MAX_BODY} bytes")
        try:
            body = json.loads(raw)
        except ValueError as exc:  # UnicodeDecodeError is a ValueError too
            return _error(400, "bad_json", f"the body is not JSON: {exc}")
        try:
            emission = parse_body(body)
        except BadEvent as exc:
            return _error(422, "invalid_event", str(exc),
                          problems=[{"field": field, "problem": problem} for field, problem in exc.problems])
        try:
            params = await chat.emit(emission)
        except NotConnected as exc:
            return JSONResponse({"error": {"code": "not_connected", "message": str(exc)}}, status_code=503,
                                headers={"Retry-After": "1"})
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


class ChatPage:
    """The page's server on its bound socket: `run` until `stop`."""

    def __init__(self, chat: ChatApp, sock: socket.socket) -> None:
        self.sock = sock
        host, port = sock.getsockname()[:2]
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
        config = uvicorn.Config(web_app(chat), log_config=None, access_log=False, lifespan="off",
                                timeout_graceful_shutdown=2, log_level="warning")
        self.server = WebServer(config)

    async def run(self) -> None:
        await self.server.serve(sockets=[self.sock])

    def stop(self) -> None:
        self.server.should_exit = True


def open_page(chat: ChatApp, host: str, port: int) -> ChatPage | None:
    """The page on host:port, logged with its address; None (logged with what to do, the MCP
    side goes on without it) when the address cannot be bound."""
    try:
        sock = bind(host, port)
    except OSError as exc:
        log("chat page not served", host=host, port=port, error=str(exc),
            fix="free the port or choose another with --web-port / CHAT_WEB_PORT (0 = any free port)")
        return None
    page = ChatPage(chat, sock)
    log("chat page serving", url=page.url)
    return page
