"""The plain ASGI the edge's HTTP surface is written in: its types, a request's headers and body,
and a JSON response."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def header(scope: Scope, name: str) -> str | None:
    wanted = name.lower().encode()
    return next((v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == wanted), None)


async def respond(send: Send, status: int, body: dict[str, Any] | None = None,
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode() if body is not None else b""
    extra = [(b"content-type", b"application/json")] if body is not None else []
    await send({"type": "http.response.start", "status": status,
                "headers": [*extra, (b"content-length", str(len(data)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


async def read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body read already, then what the client sends next."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
