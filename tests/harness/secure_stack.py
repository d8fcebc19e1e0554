"""Aurora on a secured nats-server (deploy/nats-auth.conf), every service connected as its own NATS
user, built with `StackBuilder`: by default every service and the echo app."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aurora_cli.devstack import NATS_USERS
from tests.harness.apps_config import echo_app
from tests.harness.processes import ServiceProcess, service_env
from tests.harness.runner_stack import RUNNER_ENV
from tests.harness.secure_nats import SecureNats, Session, open_session, secure_nats
from tests.harness.stack import FOLDER_KINDS, Stack, StackBuilder

SERVICES = tuple(NATS_USERS)  # every service, by its folder under services/
# A large event travels to the runner by reference, through the router's Object Store.
SERVICE_ENV = {"router": {"AURORA_ROUTER_INLINE_LIMIT": "1024"}, "runner": RUNNER_ENV,
               "mcp_edge": {"AURORA_EDGE_PORT": "0"}}  # any free port: 8795 may be taken on a shared machine


@dataclass
class SecureStack:
    nats: SecureNats
    running: Stack
    counter_file: Path  # what the echo app counted (`echo_counter_file`)

    @property
    def processes(self) -> dict[str, ServiceProcess]:
        """By the service's folder under services/ (`mcp_gateway`, `router`, …)."""
        return self.running.processes

    @property
    def log_folder(self) -> Path:
        """Where the stack's processes and nats-server log (a failed test's report shows them)."""
        return self.running.log_folder

    def env(self, user: str, **extra: str) -> dict[str, str]:
        """A process's environment as `user` (the `aurora` CLI as the operator …)."""
        return service_env(self.nats.url, NATS_USER=user, NATS_PASSWORD=self.nats.password(user), **extra)

    async def session(self, user: str) -> Session:
        return await open_session(self.nats.url, user, self.nats.password(user))


def echo_counter_file(folder: Path) -> Path:
    return folder / "echo-counter.jsonl"


@contextmanager
def secure_stack(folder: Path, *, apps: Mapping[str, dict[str, Any]] | None = None,
                 services: Sequence[str] = SERVICES,
                 people: Mapping[str, Sequence[str]] | None = None) -> Iterator[SecureStack]:
    """`services` (folders under services/) on a secured nats-server of their own, each waited
    for until it serves; `apps` by default the echo app counting into `echo_counter_file`;
    `people` (name → roles) as `start_secure_nats` issues them."""
    counter_file = echo_counter_file(folder)
    if apps is None:
        apps = {"echo": echo_app(mcp={"env": {"ECHO_COUNTER_FILE": str(counter_file)}})}
    with secure_nats(folder, people) as nats:
        builder = StackBuilder(folder).broker(nats.url, nats.credentials).apps(dict(apps))
        for name in services:
            builder.service(FOLDER_KINDS[name], name, **SERVICE_ENV.get(name, {}))
        with builder.running() as running:
            yield SecureStack(nats, running, counter_file)
