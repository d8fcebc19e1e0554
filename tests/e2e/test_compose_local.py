"""compose.yaml's own commands, run as local processes (no Docker here): `creds-init` makes the
credentials (twice: the second run keeps them), the nats service's command sources the hashes and
starts nats-server with deploy/nats.conf, and every Aurora service starts with its compose
environment and only its own mounted credentials file; the server refused nothing they did, an
anonymous client is refused, and the operator's file from the volume works for the CLI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aurora_cli.creds import IDENTITIES
from aurora_cli.localnats import free_port, nats_server_binary
from shared.readiness import READY_FILE
from tests.e2e.compose_stack import healthy, interpolate, localize, mounts
from tests.harness.cli import AURORA
from tests.harness.processes import REPO, ServiceProcess, stop_services

COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text(encoding="utf-8"))
SERVICES: dict[str, Any] = COMPOSE["services"]


@pytest.fixture
def volumes(tmp_path: Path) -> dict[str, Path]:
    found = {name: tmp_path / "volumes" / name for name in COMPOSE["volumes"]}
    for path in found.values():
        path.mkdir(parents=True)
    return found


def test_compose_commands_run_locally_with_generated_credentials(tmp_path: Path, volumes: dict[str, Path]) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "AURORA_"))}
    clean["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{clean.get('PATH', '')}"

    # creds-init, twice: the second run keeps every file as it was.
    init = SERVICES["creds-init"]
    argv = [localize(a, mounts(init, volumes)) for a in init["command"]]
    assert argv[0] == "aurora"
    for attempt in range(2):
        done = subprocess.run([str(AURORA), *argv[1:]], env=clean, capture_output=True, text=True, timeout=60,
                              check=False)
        assert done.returncode == 0, done.stderr
        if attempt == 0:
            first = {p.name: p.read_bytes() for p in volumes["aurora-creds"].iterdir()}
    assert {p.name: p.read_bytes() for p in volumes["aurora-creds"].iterdir()} == first

    # nats: its compose command, paths mapped to local folders, on free ports.
    nats = SERVICES["nats"]
    where = mounts(nats, volumes)
    etc = tmp_path / "etc-nats"
    etc.mkdir()
    # The container's /etc/nats, so that nats.conf finds nats-auth.conf beside it.
    for target, source in list(where.items()):
        if target.startswith("/etc/nats/"):
            shutil.copy(source, etc / Path(target).name)
            (etc / Path(target).name).chmod(0o600)
            where[target] = etc / Path(target).name
    command = [localize(interpolate(a), where) for a in nats["command"]]
    assert command[:2] == ["sh", "-ec"]
    command[2] = command[2].replace("exec nats-server", f"exec {nats_server_binary()}")
    port, monitor = free_port(), free_port()
    log = tmp_path / "nats.log"
    with log.open("wb") as out:
        server = subprocess.Popen([*command, "-a", "127.0.0.1", "-p", str(port), "-m", str(monitor)],
                                  env={"PATH": clean["PATH"]}, stdout=out, stderr=subprocess.STDOUT)
    processes: list[ServiceProcess] = []
    try:
        healthy(f"http://127.0.0.1:{monitor}/healthz?js-enabled-only=true", server, log)
        url = f"nats://127.0.0.1:{port}"
        anonymous = subprocess.run([str(AURORA), "streams", "--json"], env={**clean, "NATS_URL": url}, cwd=tmp_path,
                                   capture_output=True, text=True, timeout=60, check=False)
        assert anonymous.returncode == 1 and "Authorization Violation" in anonymous.stderr
        server_env = _environ(server.pid)  # the hashes, sourced by the command; no password
        assert sorted(k for k in server_env if k.endswith("_PASSWORD")) == sorted(_hashes(volumes))
        assert all(server_env[k].startswith('"$2b$') for k in _hashes(volumes))
        passwords = [line.split("=", 1)[1] for p in volumes["aurora-creds"].glob("*.env")
                     if p.name != "server-users.env" for line in p.read_text().splitlines()
                     if line.startswith("NATS_PASSWORD=")]
        assert len(passwords) == len(IDENTITIES)
        assert not [pw for pw in passwords if pw in "\n".join(server_env.values())]

        logs = tmp_path / "logs"
        logs.mkdir()
        for name, service in SERVICES.items():
            command = service.get("command") or []
            if command[:2] != ["python", "-m"] or not command[2].startswith("services."):
                continue
            where = mounts(service, volumes)
            env = {**clean, **{k: localize(interpolate(str(v)), where) for k, v in service["environment"].items()}}
            env["NATS_URL"] = url
            for key, value in list(env.items()):  # each container has its own ports; here they share one host
                if key.endswith("_PORT") and value.isdigit():
                    env[key] = str(free_port())
                elif key.endswith("_HOST") and value == "0.0.0.0":
                    env[key] = "127.0.0.1"
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = ""  # no Jaeger here (tests/e2e/compose_stack.py stands one in)
            env[READY_FILE] = str(tmp_path / "ready" / name)  # each container has its own /tmp
            processes.append(ServiceProcess(command[2], env, logs, name).start())
        for process in processes:
            process.wait_ready(timeout=60)  # its ready file, as the container's health check tests

        operator = volumes["aurora-creds"] / "operator.env"
        streams = subprocess.run([str(AURORA), "streams", "--json"], cwd=tmp_path,
                                 env={**clean, "NATS_URL": url, "NATS_CREDS_ENV_FILE": str(operator)},
                                 capture_output=True, text=True, timeout=60, check=False)
        assert streams.returncode == 0, streams.stderr
        for process in processes:
            assert process.alive(), process.logs()[-3000:]
        assert [line for line in log.read_text().splitlines() if "Violation" in line] == []
    finally:
        stop_services(processes)
        server.terminate()
        server.wait(15)


def _hashes(volumes: dict[str, Path]) -> list[str]:
    text = (volumes["aurora-creds"] / "server-users.env").read_text()
    return re.findall(r"^(AURORA_NATS_\w+_PASSWORD)=", text, flags=re.MULTILINE)


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)
