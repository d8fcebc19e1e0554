"""A real NATS broker for tests: testcontainers' NATS when Docker answers, else the local binary."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

from aurora_cli.localnats import LocalNats


class Broker(Protocol):
    @property
    def url(self) -> str: ...

    def restart(self) -> None:
        """Stop the server and start it again on the same store and address (clients reconnect)."""
        ...

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

    def restart(self) -> None:
        # `docker restart` keeps the container, so its JetStream store; the URL is read again
        # from the container afterwards.
        self._container.get_wrapped_container().restart()

    def stop(self) -> None:
        self._container.stop()


class LocalBroker(LocalNats):
    """The local nats-server binary on a temporary store."""

    def restart(self) -> None:
        self.stop()
        self.start()


def start_broker(store_dir: Path, log_file: Path | None = None, *, use_docker: bool = False) -> Broker:
    if use_docker:
        return ContainerBroker()
    server = LocalBroker(store_dir, log_file=log_file)
    server.start()
    return server


def jetstream_time(seconds_from_now: float) -> str:
    """A moment as the JetStream API takes it (e.g. `pause_consumer`'s `pause_until`)."""
    return (datetime.now(UTC) + timedelta(seconds=seconds_from_now)).strftime("%Y-%m-%dT%H:%M:%SZ")
