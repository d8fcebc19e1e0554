"""The chat app as a real process over stdio (a real MCP client on the other end, as the
supervisor would be) with its web page on a free port: `chat_web` yields a `Web` that posts
signed webhook bodies and reads the conversation view over real HTTP."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from services.mcp_gateway.transports.tap import tapped
from tests.harness.chat_webhook import SECRET_ENV, WEBHOOK_SECRET, post_signed_async
from tests.harness.mcp_apps import AppClient
from tests.harness.processes import REPO
from tests.harness.waiting import poll

SERVING = re.compile(r'"chat page serving", "url": "(http://[^"]+)"')


class Web:
    def __init__(self, chat: AppClient, url: str, stderr: Path) -> None:
        self.chat = chat
        self.url = url
        self.stderr = stderr
        self.http = httpx.AsyncClient(base_url=url, timeout=10)

    async def post(self, body: Any) -> httpx.Response:
        """`body`, signed with the app's webhook secret."""
        return await post_signed_async(self.http, body)

    async def connected(self) -> None:
        """Once the app has handled `notifications/initialized` (the client sends it and goes on)."""

        async def ready() -> bool:
            return bool((await self.http.get("/healthz")).json()["connected"])

        await poll(ready, timeout=10, what="the chat app to see the client's session")

    async def view(self, conversation_id: str) -> dict[str, Any]:
        reply = await self.http.get(f"/conversations/{conversation_id}")
        assert reply.status_code == 200, reply.text
        found: dict[str, Any] = reply.json()
        return found


def text_of(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


async def served_url(stderr: Path) -> str:
    async def found() -> str | None:
        match = SERVING.search(text_of(stderr))
        return match.group(1) if match else None

    return await poll(found, timeout=20, what="the chat page's address on stderr")


@asynccontextmanager
async def chat_web(tmp_path: Path, *, port: str = "0", initialize: bool = True,
                   log_file: Path | None = None, env_extra: dict[str, str] | None = None) -> AsyncIterator[Web]:
    env = {"PATH": "/usr/bin:/bin", "AURORA_APP_STARTUP": json.dumps({"bot": "bot-web"}), "CHAT_WEB_PORT": port,
           SECRET_ENV: WEBHOOK_SECRET, **(env_extra or {})}
    if log_file is not None:
        env["CHAT_LOG_FILE"] = str(log_file)
    params = StdioServerParameters(command=sys.executable, args=["-m", "apps.aurora_app_chat"], env=env,
                                   cwd=str(REPO))
    stderr_path = tmp_path / f"chat-stderr-{port}.log"
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](100)

    async def observe(method: str, params: dict[str, Any] | None, receipt: str | None) -> None:
        if method == "aurora/event":
            await send.send(params or {})

    with stderr_path.open("w") as stderr:
        async with (send, receive, tapped(stdio_client(params, errlog=stderr), observe) as (read, write),
                    ClientSession(read, write) as session):
            if initialize:
                await session.initialize()
            url = await served_url(stderr_path) if port == "0" else f"http://127.0.0.1:{port}/"
            web = Web(AppClient(session, receive), url, stderr_path)
            try:
                if initialize and port == "0":
                    await web.connected()
                yield web
            finally:
                await web.http.aclose()
