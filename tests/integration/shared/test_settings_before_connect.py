"""Every service checks its settings before it connects: with NATS down (nothing listens on the
URL) a bad value still exits at once with status 2 and one line naming the variable and value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aurora_cli.localnats import free_port
from tests.harness.processes import REPO, service_env

# `connect` would retry for ever, so a value checked after it never exits; unloaded, each exits
# within 2-3 s (imports), and the margin is for a machine shared by many test runs.
EXIT_WITHIN = 60.0


@pytest.mark.parametrize(("module", "variable", "value"), [
    ("services.app_supervisor", "AURORA_STOP_GRACE_SECONDS", "-1"),
    ("services.mcp_gateway", "AURORA_APPROVAL_TTL_SECONDS", "soon"),
    ("services.event_bridge", "AURORA_BRIDGE_BATCH", "many"),
    ("services.router", "AURORA_ROUTER_BATCH", "0"),
    ("services.runner", "AURORA_RUNNER_CONCURRENCY", "lots"),
])
def test_a_bad_value_exits_2_naming_it_while_nats_is_down(tmp_path: Path, module: str, variable: str,
                                                          value: str) -> None:
    apps = tmp_path / "apps.yml"
    apps.write_text("apps: {}\n", encoding="utf-8")
    env = service_env(f"nats://127.0.0.1:{free_port()}", AURORA_APPS_CONFIG=str(apps), **{variable: value})
    done = subprocess.run([sys.executable, "-m", module], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=EXIT_WITHIN)
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{variable}={value!r}" in lines[0] and "must be" in lines[0], lines[0]


def test_a_bad_apps_config_exits_2_before_connecting(tmp_path: Path) -> None:
    """The apps config is settings too: the gateway and the router read it before connecting."""
    apps = tmp_path / "apps.yml"
    apps.write_text("apps:\n  notes:\n    mcp: {transport: carrier-pigeon}\n", encoding="utf-8")
    env = service_env(f"nats://127.0.0.1:{free_port()}", AURORA_APPS_CONFIG=str(apps))
    for module in ("services.mcp_gateway", "services.router"):
        done = subprocess.run([sys.executable, "-m", module], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=EXIT_WITHIN)
        assert done.returncode == 2 and str(apps) in done.stderr and "Traceback" not in done.stderr, done.stderr
