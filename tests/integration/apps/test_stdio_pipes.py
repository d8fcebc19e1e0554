"""An app served by `apps.stdio.serve_stdio`, spoken to by the official MCP client over real
pipes: the calls are answered on the loop's pipes, without the SDK's worker threads, and what a
handler prints goes to stderr, not onto the wire."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.harness.processes import REPO

APP = REPO / "tests" / "apps" / "piped_app.py"


@asynccontextmanager
async def piped_app(errors: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=[str(APP)], cwd=str(REPO))
    with errors.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def _text(result: object) -> str:
    return " ".join(getattr(block, "text", "") for block in getattr(result, "content", []))


async def test_calls_are_answered_without_worker_threads(tmp_path: Path) -> None:
    async with piped_app(tmp_path / "stderr.log") as session:
        for _ in range(3):
            assert _text(await session.call_tool("echo", {"text": "hello"})) == "hello"
        counted = await session.call_tool("threads", {})
    assert not counted.is_error
    assert _text(counted) == "1"  # the SDK's own stdio reads each line on a worker thread


async def test_what_a_handler_prints_goes_to_stderr_not_onto_the_wire(tmp_path: Path) -> None:
    errors = tmp_path / "stderr.log"
    async with piped_app(errors) as session:
        result = await session.call_tool("shout", {"text": "over the wire?"})
        after = await session.call_tool("echo", {"text": "still framed"})
    assert not result.is_error and _text(result) == "over the wire?"
    assert _text(after) == "still framed"
    assert "stray output: over the wire?" in errors.read_text(encoding="utf-8")


async def test_a_message_longer_than_a_stream_readers_default_limit(tmp_path: Path) -> None:
    text = "x" * (1024 * 1024)
    async with piped_app(tmp_path / "stderr.log") as session:
        result = await session.call_tool("echo", {"text": text})
    assert not result.is_error
    assert _text(result) == text
