"""Run the chat app over stdio: `python -m apps.aurora_app_chat` (startup JSON in AURORA_APP_STARTUP,
side effects also appended to the JSONL file named by CHAT_LOG_FILE when set)."""

from __future__ import annotations

import os

import anyio

from apps.common import load_startup

from .sent import SentLog
from .server import ChatApp


async def main() -> None:
    app = ChatApp(load_startup(), SentLog(os.environ.get("CHAT_LOG_FILE") or None))
    await app.server.run_stdio_async()


if __name__ == "__main__":
    anyio.run(main)
