"""deploy/nats-auth.conf, compose.yaml, .env.example and `aurora dev --secure` agree: one user
per service, each password from its own variable, no secret in any committed file."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from nats.aio.client import Client as NATS
from rich.console import Console

from aurora_cli.devstack import (
    CLIENT_USERS,
    NATS_USERS,
    DevStack,
    DevStackError,
    ServiceSpec,
    password_variable,
    service_specs,
)
from aurora_cli.localnats import free_port, nats_server_binary
from tests.harness.processes import REPO

CONFIG = (REPO / "deploy" / "nats-auth.conf").read_text(encoding="utf-8")
COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text(encoding="utf-8"))
USERS = (*NATS_USERS.values(), *CLIENT_USERS)


def test_every_user_reads_its_password_from_its_own_variable() -> None:
    users = dict(re.findall(r'\{user: "([a-z-]+)", password: \$(\w+), permissions: \$\w+\}', CONFIG))
    assert users == {user: password_variable(user) for user in USERS}
    assert len(re.findall(r"password", CONFIG.split("users = [")[1])) == len(USERS)  # no literal one
    assert "no_auth_user" not in CONFIG.replace("There is no `no_auth_user`", "")


def test_compose_hands_each_service_only_its_own_credentials() -> None:
    services = COMPOSE["services"]
    assert set(services["nats"]["environment"]) == {password_variable(user) for user in USERS}
    for folder, user in NATS_USERS.items():
        env = services[folder.replace("_", "-")]["environment"]
        assert env["NATS_USER"] == user
        assert env["NATS_PASSWORD"].startswith(f"${{{password_variable(user)}:?")  # required, not defaulted
        assert not any(key.startswith("AURORA_NATS_") for key in env)
    assert "environment" not in services["aurora-app-notes"]  # apps are not NATS users


def test_env_example_names_every_variable_and_no_value() -> None:
    lines = [line for line in (REPO / ".env.example").read_text(encoding="utf-8").splitlines()
             if line and not line.startswith("#")]
    assert lines == [f"{password_variable(user)}=" for user in USERS]
    assert ".env" in (REPO / ".gitignore").read_text(encoding="utf-8").split()


def test_the_config_parses_with_the_passwords_dev_secure_draws(tmp_path: Path) -> None:
    stack = DevStack(tmp_path, port=4999, specs=service_specs(list(NATS_USERS)), secure=True, env={"PATH": "/bin"})
    assert stack.credentials is not None
    env = {"PATH": "/bin", **stack.credentials.server_env()}
    result = subprocess.run([str(nats_server_binary()), "-c", str(REPO / "deploy" / "nats-auth.conf"), "-t"],
                            capture_output=True, text=True, timeout=30, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert stack.nats.env == env


# A child that reports the NATS part of its environment, then says it started.
REPORT = ("import json, os; print(json.dumps({'msg': 'started', 'nats': {k: v for k, v in os.environ.items() "
          "if k.startswith(('NATS_', 'AURORA_NATS_'))}}), flush=True)")


async def test_dev_secure_gives_each_child_its_own_user_and_apps_none(tmp_path: Path) -> None:
    base = {**os.environ, "NATS_USER": "someone", "NATS_PASSWORD": "theirs", "AURORA_NATS_RUNNER_PASSWORD": "x"}
    specs = [ServiceSpec("aurora_app_notes", (sys.executable, "-c", REPORT), ready_port=free_port()),
             ServiceSpec("runner", (sys.executable, "-c", REPORT))]
    stack = DevStack(tmp_path / "dev", port=free_port(), specs=specs, secure=True, env=base,
                     console=Console(file=io.StringIO()))
    try:
        stack.start()
        operator = dict(line.split("=", 1) for line in (tmp_path / "dev" / "operator.env").read_text().split())
        assert operator["NATS_USER"] == "operator"
        assert (tmp_path / "dev" / "operator.env").stat().st_mode & 0o077 == 0
        nc = await nats.connect(stack.url, user=operator["NATS_USER"], password=operator["NATS_PASSWORD"])
        await nc.close()
        anonymous = NATS()
        try:
            with pytest.raises(nats.errors.Error, match="Authorization Violation"):
                await anonymous.connect(stack.url, allow_reconnect=False, connect_timeout=2)
        finally:
            await anonymous.close()
        assert "env $(cat " in stack.banner()
    finally:
        stack.stop(force=True)
    assert stack.credentials is not None
    seen = {spec.label: json.loads((tmp_path / "dev" / "logs" / f"{spec.label}.log").read_text())["nats"]
            for spec in specs}
    assert seen["aurora-app-notes"] == {"NATS_URL": stack.url}  # an app gets no credentials at all
    assert seen["runner"] == {"NATS_URL": stack.url, "NATS_USER": "runner",
                              "NATS_PASSWORD": stack.credentials.passwords["runner"]}


def test_the_default_dev_stack_has_no_users(tmp_path: Path) -> None:
    stack = DevStack(tmp_path, port=4999, specs=service_specs(list(NATS_USERS)))
    assert stack.credentials is None and stack.nats.config_file is None and stack.nats.env is None


def test_dev_secure_refuses_what_the_config_does_not_cover(tmp_path: Path) -> None:
    with pytest.raises(DevStackError, match="no NATS user for the service"):
        DevStack(tmp_path, specs=service_specs(["event_bridge", "billing"]), secure=True)
    with pytest.raises(DevStackError, match="prefix 'amp'"):
        DevStack(tmp_path, specs=[], secure=True, env={"AURORA_SUBJECT_PREFIX": "acme"})
