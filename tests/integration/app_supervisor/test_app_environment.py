"""A stdio app cannot read any platform credential: started by the real supervisor of a secure
`aurora dev` stack (bridge, supervisor, gateway), the probe app reports its own environment and
its parent's and grandparent's /proc/<pid>/environ through a tool call; no password is in them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from aurora_cli.creds import IDENTITIES
from aurora_cli.devstack import DevStack, service_specs
from aurora_cli.localnats import free_port
from shared.config.envfile import parse_env_text
from tests.harness.cli import AURORA
from tests.harness.processes import REPO
from tests.harness.runs import stdio, write_apps

PROBE = "test.probe"
SHELL_SECRET = "shell-secret-pw-42"  # what the shell that started the stack held: no app sees it either


def _call_probe(env: dict[str, str], timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        done = subprocess.run([str(AURORA), "tools", "call", f"{PROBE}.probe", "--json"], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=30, check=False)
        if done.returncode == 0 and json.loads(done.stdout).get("status") == "ok":
            result: dict[str, Any] = json.loads(done.stdout)["structured"]
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"the probe never answered: {done.stdout[-2000:]}{done.stderr}")
        time.sleep(0.5)


def test_a_stdio_app_reads_no_credential_in_any_environment_it_can_reach(tmp_path: Path) -> None:
    apps = write_apps(tmp_path, {"probe": stdio([sys.executable, str(REPO / "tests" / "apps" / "env_probe_app.py")],
                                                package=PROBE)})
    base = {**{k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "AURORA_"))},
            "AURORA_APPS_CONFIG": str(apps), "NATS_PASSWORD": SHELL_SECRET, "NATS_USER": "someone",
            "AURORA_NATS_APP_SUPERVISOR_PASSWORD": SHELL_SECRET}
    stack = DevStack(tmp_path / "dev", port=free_port(), cwd=REPO, env=base,
                     specs=service_specs(["event_bridge", "app_supervisor", "mcp_gateway"]),
                     console=Console(file=io.StringIO()))
    try:
        stack.start()
        client = {**{k: v for k, v in base.items() if not k.startswith(("NATS_", "AURORA_"))},
                  **stack.client_env("operator")}
        found = _call_probe(client)
        parent = Path(f"/proc/{found['parent']['pid']}/cmdline").read_bytes()
    finally:
        stack.stop(force=True)
    creds = tmp_path / "dev" / "creds"
    secrets = [SHELL_SECRET, *(parse_env_text((creds / f"{u}.env").read_text(), source=u)["NATS_PASSWORD"]
                               for u in IDENTITIES)]
    assert b"services.app_supervisor" in parent and "raw" in found["parent"]  # it did read them
    assert found["grandparent"] is not None and "raw" in found["grandparent"]
    everything = json.dumps(found)
    assert [s for s in secrets if s in everything] == []
    own = found["own"]
    assert not [k for k in own if k.startswith(("NATS_", "AURORA_")) and k != "AURORA_APP_STARTUP"], sorted(own)
    # The supervisor was given a path, not a password: the only NATS credential in its environ.
    assert "NATS_CREDS_ENV_FILE" in found["parent"]["keys"] and "NATS_PASSWORD" not in found["parent"]["keys"]
