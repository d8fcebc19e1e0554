"""The shell's secrets reach no service `aurora dev` starts unless a service's settings declare
them: the real gateway and runner of a dev stack, their /proc/<pid>/environ read as they run."""

from __future__ import annotations

import io
import os
from pathlib import Path

from rich.console import Console

from aurora_cli.devstack import DevStack, service_specs
from aurora_cli.localnats import free_port
from tests.harness.processes import REPO

SHELL = {
    "OPENAI_API_KEY": "sk-shell-openai-key-31337",  # exported in the shell for something else
    "SOME_SHELL_SECRET": "shell-only-secret-2718",
    "AURORA_GATEWAY_SECRET_ENV": "CRM_TOKEN", "CRM_TOKEN": "crm-declared-to-the-gateway-1",
    "AURORA_MODEL_API_KEY_ENV": "MODEL_KEY", "MODEL_KEY": "model-key-declared-to-the-runner-2",
    "AURORA_RUNNER_SEAL_KEY": "runner-only-seal-key-3",
}


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def test_each_service_sees_its_own_settings_and_declared_secrets_only(tmp_path: Path) -> None:
    apps = tmp_path / "apps.yml"
    apps.write_text("apps: {}\n", encoding="utf-8")
    base = {**{k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "AURORA_"))},
            **SHELL, "AURORA_APPS_CONFIG": str(apps)}
    stack = DevStack(tmp_path / "dev", port=free_port(), cwd=REPO, env=base,
                     specs=service_specs(["mcp_gateway", "runner"]), console=Console(file=io.StringIO()))
    try:
        stack.start()  # returns once each service said it started: both are running now
        pids = stack.pids()
        gateway, runner = environ(pids["mcp-gateway"]), environ(pids["runner"])
    finally:
        stack.stop(force=True)
    for env in (gateway, runner):
        assert "OPENAI_API_KEY" not in env and "SOME_SHELL_SECRET" not in env, sorted(env)
        assert env["PATH"] and env["AURORA_APPS_CONFIG"] == str(apps) and env["NATS_URL"] == stack.url
        assert "NATS_CREDS_ENV_FILE" in env  # its own identity, by file
    assert gateway["CRM_TOKEN"] == SHELL["CRM_TOKEN"] and gateway["AURORA_GATEWAY_SECRET_ENV"] == "CRM_TOKEN"
    assert gateway["AURORA_SECRETS_DIR"] == str(tmp_path / "dev" / "secrets")  # where dev's secret files go
    assert "MODEL_KEY" not in gateway and "AURORA_RUNNER_SEAL_KEY" not in gateway
    assert runner["MODEL_KEY"] == SHELL["MODEL_KEY"]
    assert runner["AURORA_RUNNER_SEAL_KEY"] == SHELL["AURORA_RUNNER_SEAL_KEY"]
    assert "CRM_TOKEN" not in runner and "AURORA_GATEWAY_SECRET_ENV" not in runner
