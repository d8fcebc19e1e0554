"""`aurora tokens create|list|revoke` against the edge stack, and mcp-edge's settings checked
before it connects."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
from nats.aio.client import Client as NATS

from tests.harness.cli import AURORA, cli_runner
from tests.harness.processes import REPO, service_env
from tests.harness.stack import Stack
from tests.integration.mcp_edge.helpers import ECHO_TOOL, agent


async def test_tokens_made_listed_and_revoked_from_the_cli(edge_stack: Stack, enc: NATS) -> None:
    await agent(enc, "edge-cli", [ECHO_TOOL])
    cli = cli_runner(edge_stack.url)
    made = cli("tokens", "create", "--agent", "edge-cli", "--name", "laptop", "--expires", "1h")
    assert made.returncode == 0, made.stderr
    secret = next(line for line in made.stdout.splitlines() if line.startswith("aet_"))
    listed = json.loads(cli("tokens", "list", "--agent", "edge-cli", "--json").stdout)["tokens"]
    [shown] = listed
    assert shown["name"] == "laptop" and shown["expires_at"] and secret not in json.dumps(listed)
    url = edge_stack.endpoint("edge-cli")
    ping = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "1"}}}
    headers = {"Authorization": f"Bearer {secret}", "Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await http.post(url, json=ping, headers=headers)).status_code == 200
        revoked = cli("tokens", "revoke", shown["id"])
        assert revoked.returncode == 0 and "revoked" in revoked.stdout, revoked.stderr
        assert (await http.post(url, json=ping, headers=headers)).status_code == 401
    unknown = cli("tokens", "create", "--agent", "edge-nobody")
    assert unknown.returncode != 0 and "no agent 'edge-nobody'" in unknown.stderr
    bad = cli("tokens", "create", "--agent", "edge-cli", "--expires", "tomorrow")
    assert bad.returncode != 0 and "neither a duration" in bad.stderr
    assert AURORA.exists()


def test_a_bad_setting_stops_the_edge_before_it_connects() -> None:
    env = service_env("nats://127.0.0.1:1", AURORA_EDGE_PORT="eighty")  # nothing listens there: never reached
    done = subprocess.run([sys.executable, "-m", "services.mcp_edge"], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "AURORA_EDGE_PORT" in done.stderr and "configuration error" in done.stderr
