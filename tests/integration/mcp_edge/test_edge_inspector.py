"""A third-party client against an agent's endpoint: the MCP Inspector's CLI (npm).

`make test` installs it into .cache/mcp-inspector (`make inspector`); run alone, the test
installs it there itself when npm is on the machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from tests.harness.processes import REPO
from tests.harness.stack import Stack
from tests.integration.mcp_edge.helpers import COUNTER_GET, ECHO_TOOL, agent, token

VERSION = "2.12.0"  # as the Makefile's INSPECTOR_VERSION
FOLDER = REPO / ".cache" / "mcp-inspector"
BINARY = FOLDER / "node_modules" / ".bin" / "mcp-inspector"


def inspector() -> Path:
    if BINARY.exists():
        return BINARY
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the MCP Inspector (an npm package) cannot be installed")
    subprocess.run([npm, "install", "--prefix", str(FOLDER), "--no-audit", "--no-fund", "--loglevel=error",
                    f"@modelcontextprotocol/inspector@{VERSION}"], check=True, timeout=600)
    return BINARY


async def run_cli(binary: Path, home: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json")}
    process = await asyncio.create_subprocess_exec(str(binary), "--cli", *args, env=env,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, (out.decode(errors="replace"), err.decode(errors="replace"))
    value: dict[str, Any] = json.loads(out)
    return value


async def test_the_mcp_inspector_lists_and_calls(edge_stack: Stack, enc: NATS, tmp_path: Path) -> None:
    binary = inspector()
    await agent(enc, "edge-inspector", [ECHO_TOOL, COUNTER_GET])
    created = await token(enc, "edge-inspector", name="inspector")
    url = edge_stack.endpoint("edge-inspector")
    auth = f"Authorization: Bearer {created['token']}"
    listed = await run_cli(binary, tmp_path, url, "--transport", "http", "--method", "tools/list", "--header", auth)
    assert sorted(t["name"] for t in listed["tools"]) == [COUNTER_GET, ECHO_TOOL]
    called = await run_cli(binary, tmp_path, url, "--transport", "http", "--method", "tools/call",
                           "--tool-name", ECHO_TOOL, "--tool-arg", "value=from-inspector", "--header", auth)
    assert called.get("isError") in (None, False), called
    assert called["structuredContent"] == {"value": "from-inspector"}, called
