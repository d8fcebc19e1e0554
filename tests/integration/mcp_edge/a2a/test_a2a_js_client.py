"""The official A2A JavaScript client (@a2a-js/sdk, npm) against an Aurora agent: a read sent
and its task got (tests/integration/mcp_edge/a2a/js_client.mjs).

`make test` installs the SDK into .cache/a2a-js (`make a2a-js`); run alone, the test installs it
there itself when npm is on the machine, and is skipped only when npm is not.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from shared.nats.admin_service import admin_request
from tests.harness.processes import REPO
from tests.harness.stack import Stack
from tests.integration.mcp_edge.a2a.helpers import SUBJECTS, agent_with_token, reader

VERSION = "1.3.0"  # as the Makefile's A2A_JS_VERSION
FOLDER = REPO / ".cache" / "a2a-js"
SDK = FOLDER / "node_modules" / "@a2a-js" / "sdk"
SCRIPT = Path(__file__).with_name("js_client.mjs")


def js_sdk() -> tuple[str, Path]:
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        pytest.skip("npm is not installed: the A2A JavaScript client (an npm package) cannot be installed")
    if not (SDK / "package.json").exists():
        subprocess.run([npm, "install", "--prefix", str(FOLDER), "--no-audit", "--no-fund", "--loglevel=error",
                        f"@a2a-js/sdk@{VERSION}"], check=True, timeout=600)
    return node, SDK


async def test_the_javascript_client_sends_and_gets(a2a_stack: Stack, anc: NATS) -> None:
    node, sdk = js_sdk()
    agent_id = "a2a-js"
    secret = await agent_with_token(anc, reader(agent_id))
    process = await asyncio.create_subprocess_exec(
        node, str(SCRIPT), str(sdk), f"{a2a_stack.edge()}/agents/{agent_id}", secret, "valves from node",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, (out.decode(errors="replace"), err.decode(errors="replace"))
    shown = json.loads(out.decode().strip().splitlines()[-1])
    assert shown["sentState"] == "TASK_STATE_COMPLETED" and shown["gotState"] == "TASK_STATE_COMPLETED", shown
    assert shown["answer"] == "echoed valves from node"
    stored = await admin_request(anc, SUBJECTS, "tasks", "get", {"id": shown["id"]})
    assert stored["state"] == "succeeded" and stored["answer"] == "echoed valves from node"
