"""The example chat app over stdio, driven by an MCP client in the test (no supervisor, no web page)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.harness.mcp_apps import AppClient, stdio_app

Chat = AppClient


@asynccontextmanager
async def chat_app(log_file: Path | None = None, startup: dict[str, Any] | None = None) -> AsyncIterator[Chat]:
    # No web page here (tests/integration/apps/test_chat_web.py has it): no port to compete for.
    env = {"PATH": "/usr/bin:/bin", "AURORA_APP_STARTUP": json.dumps(startup or {}), "CHAT_WEB_PORT": "off"}
    if log_file is not None:
        env["CHAT_LOG_FILE"] = str(log_file)
    async with stdio_app("apps.aurora_app_chat", env) as (session, events):
        yield Chat(session, events)
