"""A real nats-server running deploy/nats-auth.conf, passwords drawn per test, and clients that
connect as one of its users and keep every error the server sent them."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError

from aurora_cli.devstack import AUTH_CONFIG, Credentials
from aurora_cli.localnats import LocalNats
from aurora_cli.people import PeopleStore, write_auth_config
from shared.config.settings import inbox_prefix_for
from shared.nats.bus import open_nats
from tests.harness.processes import REPO

CONFIG = REPO / AUTH_CONFIG


@dataclass
class SecureNats:
    server: LocalNats
    credentials: Credentials
    log_file: Path
    people: dict[str, str] = field(default_factory=dict)  # person → password

    @property
    def url(self) -> str:
        return self.server.url

    def password(self, user: str) -> str:
        """A person's password, or a platform identity's (`operator`, `mcp-gateway`, …)."""
        return self.people[user] if user in self.people else self.credentials.passwords[user]

    def violations(self) -> list[str]:
        """The server's own record of every refused publish or subscription."""
        if not self.log_file.exists():
            return []
        return [line for line in self.log_file.read_text(errors="replace").splitlines() if "Violation" in line]


def start_secure_nats(folder: Path, people: Mapping[str, Sequence[str]] | None = None) -> SecureNats:
    """nats-server on deploy/nats-auth.conf; with `people` (name → roles), on the copy `aurora users`
    writes, each person's generated permissions at its `# @people` line."""
    credentials = Credentials.generate()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AURORA_NATS_")}
    env.update(credentials.server_env())
    config, passwords = CONFIG, {}
    if people:
        store = PeopleStore(folder / "creds")
        passwords = {name: store.issue(name, roles, cost=4)[1] for name, roles in people.items()}
        config = write_auth_config(CONFIG, folder / "nats-auth.conf", store)
    log_file = folder / "nats-server.log"
    server = LocalNats(folder / "jetstream", log_file=log_file, config_file=config, env=env)
    server.start()
    return SecureNats(server, credentials, log_file, passwords)


@contextmanager
def secure_nats(folder: Path, people: Mapping[str, Sequence[str]] | None = None) -> Iterator[SecureNats]:
    """`start_secure_nats`, stopped on leaving."""
    server = start_secure_nats(folder, people)
    try:
        yield server
    finally:
        server.server.stop()


@dataclass
class Session:
    """One connection as one user; `errors` is what the server refused, as nats-py reports it
    (a permissions violation arrives through the error callback, the connection stays up)."""

    user: str
    nc: NATS
    errors: list[Exception] = field(default_factory=list)

    async def refused(self, subject: str, *, action: str = "publish", timeout: float = 3.0) -> str:
        """Wait for the server's permissions violation for `action` ("publish" or
        "subscription") to `subject`; return its message."""
        wanted = f'permissions violation for {action} to "{subject}"'.lower()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for error in self.errors:
                if wanted in str(error).lower():  # nats-py lower-cases the server's message
                    return str(error)
            await asyncio.sleep(0.02)
        raise AssertionError(f"{self.user}: no {wanted!r}; errors seen: {[str(e) for e in self.errors]}")

    async def clean(self) -> None:
        """Check the server refused nothing this session sent so far. The positive sign: a publish
        no identity may make, sent last. The server answers a connection in order, so once that
        refusal is here, the refusal of anything sent before it would be too."""
        marker = f"aurora.test.refusal-marker.{uuid.uuid4().hex}"
        await self.nc.publish(marker, b"")
        await self.refused(marker)
        earlier = [e for e in self.errors if marker not in str(e).lower()]
        self.errors[:] = earlier
        assert not earlier, f"{self.user} was refused: {[str(e) for e in earlier]}"


Connect = Callable[[str], Awaitable[Session]]


async def request_until_answered(session: Session, subject: str, payload: bytes, *, within: float = 5.0) -> Msg:
    """A request that tolerates "no responders" until `within` runs out: on a loaded machine the
    server has been seen to answer 503 for a queue subscription another connection had just
    flushed. A refused publish is never answered at all, so it still fails (by timeout)."""
    deadline = time.monotonic() + within
    while True:
        try:
            return await session.nc.request(subject, payload, timeout=2)
        except NoRespondersError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def open_session(url: str, user: str, password: str) -> Session:
    """Connected as the services connect: replies under the user's own inbox prefix."""
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    nc = await open_nats(servers=url, user=user, password=password, name=f"test-{user}", error_cb=on_error,
                         allow_reconnect=False, connect_timeout=3, inbox_prefix=inbox_prefix_for(user))
    return Session(user, nc, errors)
