"""A real NATS broker for tests: testcontainers' NATS when Docker answers, else the local binary."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Protocol

from aurora_cli.localnats import LocalNats


class Broker(Protocol):
    @property
    def url(self) -> str: ...

    def stop(self) -> None: ...


def docker_reachable() -> bool:
    if os.environ.get("AURORA_TEST_DOCKER", "auto") == "never" or not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class ContainerBroker:
    """nats:latest with JetStream in a container (used only when a Docker engine is reachable)."""

    def __init__(self) -> None:
        from testcontainers.nats import NatsContainer

        self._container = NatsContainer(jetstream=True)
        self._container.start()

    @property
    def url(self) -> str:
        return str(self._container.nats_uri())

    def stop(self) -> None:
        self._container.stop()


def start_broker(store_dir: Path, log_file: Path | None = None, *, use_docker: bool = False) -> Broker:
    if use_docker:
        return ContainerBroker()
    server = LocalNats(store_dir, log_file=log_file)
    server.start()
    return server
