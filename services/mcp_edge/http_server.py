"""The edge's HTTP listener: uvicorn serving the edge's app on a socket bound at start.

A part of the edge (`wiring.py`), started last and stopped first: while it serves, everything a
request reaches (the session manager, the replies, the watches) is running. The socket is bound
in `start()`, so a port in use fails the start, loudly, and what had started before is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

import uvicorn

from services.mcp_edge.config import EdgeSettings
from services.mcp_edge.http_app import EdgeApp, origin_refusal
from shared.lifecycle import Lifecycle
from shared.observability.logs import get_logger
from shared.web_origin import GuardedApp

log = get_logger("aurora.mcp_edge")
STARTED_POLL = 0.02  # seconds between looks at whether uvicorn serves yet


class EdgeHttpServer(Lifecycle[int]):
    """Running, it serves MCP on `port` (the one bound: settings may say 0, any free one)."""

    def __init__(self, app: EdgeApp, settings: EdgeSettings) -> None:
        super().__init__("the edge's HTTP server")
        self._app = app
        self._settings = settings

    @property
    def port(self) -> int:
        return self.require_started()

    async def _start(self, parts: contextlib.AsyncExitStack) -> int:
        settings = self._settings
        sock = socket.socket(socket.AF_INET6 if ":" in settings.host else socket.AF_INET)
        parts.callback(sock.close)  # after the server below stopped; at once when the bind fails
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((settings.host, settings.port))
        port: int = sock.getsockname()[1]
        # Only requests for the edge's own address, from no page or its own (DNS rebinding): 403 otherwise.
        guarded = GuardedApp(self._app, settings.origin_policy(port), body=origin_refusal,
                             on_refusal=lambda code, why: log.warning("request refused", reason=code, detail=why))
        config = uvicorn.Config(guarded, lifespan="off", log_config=None, access_log=False,
                                timeout_graceful_shutdown=5)
        http = uvicorn.Server(config)
        task = asyncio.create_task(http.serve(sockets=[sock]), name="edge-http")

        async def stop_serving() -> None:
            http.should_exit = True
            await asyncio.gather(task, return_exceptions=True)

        parts.push_async_callback(stop_serving)
        while not http.started:
            if task.done():
                task.result()
                raise RuntimeError("the edge's HTTP server stopped before it started")
            await asyncio.sleep(STARTED_POLL)
        log.info("serving", host=settings.host, port=port, url=f"http://{settings.host}:{port}/agents/<id>/mcp")
        return port
