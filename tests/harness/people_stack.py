"""A secured stack with people: a real nats-server running deploy/nats-auth.conf with people
issued at its `# @people` line (as `aurora users` writes it), and the platform services, each
connected as its own NATS user. The people's roles here are the server's view; a test adds them
to the users registry (the gateway's view) itself, as an admin would."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aurora_cli.devstack import AUTH_CONFIG, NATS_USERS, Credentials
from aurora_cli.people import PeopleStore, write_auth_config
from tests.harness.processes import REPO, ServiceProcess
from tests.harness.stack import FOLDER_KINDS, StackBuilder

# mcp-edge on any free port: its default (8795) may be taken by another test's stack on the machine
SERVICE_ENV = {"mcp_edge": {"AURORA_EDGE_PORT": "0"}}


@dataclass
class PeopleStack:
    url: str
    credentials: Credentials
    passwords: dict[str, str]  # person → password
    log_file: Path  # the server's log (its record of refused publishes)
    processes: dict[str, ServiceProcess] = field(default_factory=dict)  # by service folder

    def password(self, user: str) -> str:
        """A person's password, or a platform identity's (`operator`, `mcp-gateway`, …)."""
        return self.passwords[user] if user in self.passwords else self.credentials.passwords[user]


@contextmanager
def people_stack(folder: Path, people: Mapping[str, Sequence[str]], apps_config: Path, *,
                 services: Sequence[str] = tuple(NATS_USERS),
                 extra_env: Callable[[str], Mapping[str, str]] = lambda service: {}) -> Iterator[PeopleStack]:
    """`people`: name → roles in the server's config. `services`: folders under services/."""
    credentials = Credentials.generate()
    store = PeopleStore(folder / "creds")
    passwords = {name: store.issue(name, list(roles), cost=4)[1] for name, roles in people.items()}
    config = write_auth_config(REPO / AUTH_CONFIG, folder / "nats-auth.conf", store)
    server_env = {k: v for k, v in os.environ.items() if not k.startswith("AURORA_NATS_")}
    server_env.update(credentials.server_env())
    builder = StackBuilder(folder).auth(credentials, config, server_env).apps(apps_config)
    for name in services:
        builder.service(FOLDER_KINDS[name], name, **{**SERVICE_ENV.get(name, {}), **extra_env(name)})
    with builder.running() as stack:
        yield PeopleStack(stack.url, credentials, passwords, folder / "nats-server.log", stack.processes)
