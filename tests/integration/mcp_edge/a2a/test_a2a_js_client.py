"""The official A2A JavaScript client (@a2a-js/sdk, npm) against an Aurora agent: a read sent
and its task got, and a write that waits in input-required, is resubscribed, granted from the CLI
and completed (tests/integration/mcp_edge/a2a/js_client.mjs).

`make test` installs the SDK into .cache/a2a-js (`make a2a-js`); run alone, the test installs it
there itself when npm is on the machine, and is skipped only when npm is not.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.nats.admin_service import admin_request
from tests.harness.cli import cli_runner
from tests.harness.processes import REPO
from tests.harness.stack import Stack
from tests.integration.mcp_edge.a2a.helpers import COUNTER_INC, SUBJECTS, agent_with_token, reader, writer

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


async def next_line(process: asyncio.subprocess.Process, step: str) -> dict[str, Any]:
    """The script's next JSON line, which must be `step` (its stderr when it ended first)."""
    assert process.stdout is not None and process.stderr is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    if not line:
        err = await process.stderr.read()
        raise AssertionError(f"js_client.mjs ended before {step!r}: {err.decode(errors='replace')}")
    shown: dict[str, Any] = json.loads(line)
    assert shown.get("step") == step, shown
    return shown


async def test_the_javascript_client_completes_a_write_approved_from_the_cli(a2a_stack: Stack, anc: NATS) -> None:
    node, sdk = js_sdk()
    agent_id = "a2a-js-write"
    secret = await agent_with_token(anc, writer(agent_id))
    process = await asyncio.create_subprocess_exec(
        node, str(SCRIPT), str(sdk), f"{a2a_stack.edge()}/agents/{agent_id}", secret, agent_id, "write",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        waiting = await next_line(process, "waiting")
        assert waiting["sentState"] == "TASK_STATE_INPUT_REQUIRED", waiting
        assert COUNTER_INC in waiting["question"] and waiting["approval"] in waiting["question"], waiting
        subscribed = await next_line(process, "subscribed")  # the JS client follows the task before it is granted
        assert subscribed["state"] == "TASK_STATE_INPUT_REQUIRED", subscribed
        granted = cli_runner(a2a_stack.url)("approvals", "grant", waiting["approval"])
        assert granted.returncode == 0, granted.stderr
        done = await next_line(process, "done")
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert done["id"] == waiting["id"] and done["streamed"][-1] == "TASK_STATE_COMPLETED", done
    assert done["gotState"] == "TASK_STATE_COMPLETED" and done["answer"] == "count is 1", done
    stored = await admin_request(anc, SUBJECTS, "tasks", "get", {"id": waiting["id"]})
    assert stored["state"] == "succeeded" and stored["answer"] == "count is 1"
