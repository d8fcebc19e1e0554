"""deploy/nats-auth.conf, compose.yaml and `aurora dev` agree: one user per service, each password
(as a bcrypt hash) from its own variable, no secret in any committed file."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from aurora_cli.devstack import (
    CLIENT_USERS,
    NATS_USERS,
    DevSecurityError,
    DevStack,
    password_variable,
    service_specs,
)
from aurora_cli.localnats import nats_server_binary
from tests.harness.processes import REPO

CONFIG = (REPO / "deploy" / "nats-auth.conf").read_text(encoding="utf-8")
COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text(encoding="utf-8"))
USERS = (*NATS_USERS.values(), *CLIENT_USERS)


def test_every_user_reads_its_password_from_its_own_variable() -> None:
    users = dict(re.findall(r'\{user: "([a-z-]+)", password: \$(\w+), permissions: \$\w+\}', CONFIG))
    assert users == {user: password_variable(user) for user in USERS}
    assert len(re.findall(r"password", CONFIG.split("users = [")[1])) == len(USERS)  # no literal one
    assert "no_auth_user" not in CONFIG.replace("There is no `no_auth_user`", "")


def test_no_credential_is_committed_or_committable() -> None:
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").split()
    assert "/var/" in ignored and ".env" in ignored  # `aurora dev` keeps its credentials in var/dev/creds
    assert not (REPO / ".env.example").exists()  # compose generates them (creds-init): nothing to fill in
    services = COMPOSE["services"]
    assert "environment" not in services["nats"]  # its hashes come from the creds volume, not compose
    assert not [key for svc in services.values() for key in svc.get("environment", {})
                if key in ("NATS_PASSWORD", "NATS_USER") or key.startswith("AURORA_NATS_")]


def test_the_config_dev_writes_parses_with_the_hashes_it_makes(tmp_path: Path) -> None:
    stack = DevStack(tmp_path, port=4999, specs=service_specs(list(NATS_USERS)), env={"PATH": "/bin"})
    stack.credentials, _ = stack.security.prepare()
    assert stack.nats.config_file == tmp_path / "nats.conf"
    env = stack.security.server_env({"PATH": "/bin", "NATS_PASSWORD": "mine"})
    assert set(env) == {"PATH", *(password_variable(user) for user in USERS)}
    assert all(value.startswith('"$2b$') for key, value in env.items() if key != "PATH")
    result = subprocess.run([str(nats_server_binary()), "-c", str(tmp_path / "nats.conf"), "-t"],
                            capture_output=True, text=True, timeout=30, env=env)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dev_refuses_what_the_config_does_not_cover(tmp_path: Path) -> None:
    with pytest.raises(DevSecurityError, match="no NATS user for the service"):
        DevStack(tmp_path, specs=service_specs(["event_bridge", "billing"]))
    with pytest.raises(DevSecurityError, match=r"prefix 'amp'.*--insecure"):
        DevStack(tmp_path, specs=[], env={"AURORA_SUBJECT_PREFIX": "acme"})
    assert DevStack(tmp_path, specs=[], env={"AURORA_SUBJECT_PREFIX": "acme"}, insecure=True).nats.config_file is None
