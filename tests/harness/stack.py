"""One way for a test to stand Aurora up: a real nats-server and service processes, declared with
`StackBuilder`, started in dependency order, each waited for until it serves (its ready file,
shared/readiness.py: what a container's health check tests, not a log line), stopped in reverse.

    with StackBuilder(folder).apps(apps).supervisor().gateway().router().runners(2).running() as stack:
        async with stack.client() as nc: ...

(`async with builder.up() as stack` waits without blocking the test's event loop.)

A stack on a broker it did not start (the conftest's `broker`) leaves that broker running.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS

from aurora_cli.devstack import NATS_USERS, Credentials
from aurora_cli.localnats import LocalNats, free_port
from tests.harness.apps_config import write_apps
from tests.harness.clients import nats_client
from tests.harness.processes import ServiceProcess, service_env, stop_services

# kind → (module, rank): a service starts once every one of a lower rank serves (the gateway
# finds the supervisor's apps; runners, router, scheduler and edges call the gateway).
KINDS: dict[str, tuple[str, int]] = {
    "bridge": ("services.event_bridge", 0),
    "supervisor": ("services.app_supervisor", 0),
    "gateway": ("services.mcp_gateway", 1),
    "router": ("services.router", 2),
    "runner": ("services.runner", 2),
    "scheduler": ("services.scheduler", 2),
    "edge": ("services.mcp_edge", 2),
}
# a service's folder under services/ → its kind
FOLDER_KINDS = {module.removeprefix("services."): kind for kind, (module, _) in KINDS.items()}
READY_TIMEOUT = 60.0


def kind_of_module(module: str) -> str:
    """The stack's kind of a service module: `services.router` → `router`."""
    kinds = {name: kind for kind, (name, _) in KINDS.items()}
    if module not in kinds:
        raise ValueError(f"{module} is not one of the stack's services: {sorted(kinds)}")
    return kinds[module]


@dataclass
class Stack:
    url: str
    log_folder: Path  # its logs end a failed test's report (tests/conftest.py)
    env: dict[str, str]  # what every service of it is given
    credentials: Credentials | None = None
    processes: dict[str, ServiceProcess] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)  # an edge's tag → its base URL
    launchers: dict[str, tuple[str, ...]] = field(default_factory=dict)  # StackBuilder.launched_by

    def __getitem__(self, tag: str) -> ServiceProcess:
        return self.processes[tag]

    def of(self, kind: str) -> list[ServiceProcess]:
        module = KINDS[kind][0]
        return [p for p in self.processes.values() if p.module == module]

    def edge(self, instance: int = 0) -> str:
        """The base URL of mcp-edge `instance` (`StackBuilder.edges`)."""
        return self.urls[f"edge-{instance}"]

    def endpoint(self, agent: str, instance: int = 0) -> str:
        """An agent's MCP endpoint on mcp-edge `instance`."""
        return f"{self.edge(instance)}/agents/{agent}/mcp"

    def client(self, **options: Any) -> AbstractAsyncContextManager[NATS]:
        """A client of the stack's broker (as the operator on a secured one)."""
        if self.credentials is not None:
            options = {"user": "operator", "password": self.credentials.passwords["operator"], **options}
        return nats_client(self.url, **options)

    def launch(self, kind: str, tag: str | None = None, *, apps: Path | None = None, **env: str) -> ServiceProcess:
        """Start one more service (not waited for); `env` over the stack's (NATS_URL through a proxy …)."""
        return self._launch(kind, tag or kind, apps, env)

    def _launch(self, kind: str, tag: str, apps: Path | None, env: Mapping[str, str]) -> ServiceProcess:
        module = KINDS[kind][0]
        if tag in self.processes and self.processes[tag].alive():
            raise ValueError(f"the stack already runs {tag!r}")
        own = dict(self.env)
        if apps is not None:
            own["AURORA_APPS_CONFIG"] = str(apps)
        if self.credentials is not None:
            user = NATS_USERS[module.removeprefix("services.")]
            own.update(NATS_USER=user, NATS_PASSWORD=self.credentials.passwords[user])
        if kind == "runner":
            own["AURORA_RUNNER_INSTANCE"] = tag
        process = ServiceProcess(module, {**own, **env}, self.log_folder / "logs", tag,
                                 launcher=self.launchers.get(tag, ())).start()
        self.processes[tag] = process
        return process

    async def serving(self, kind: str, tag: str | None = None, *, apps: Path | None = None,
                      **env: str) -> ServiceProcess:
        """`launch`, then wait until it serves."""
        return await self.launch(kind, tag, apps=apps, **env).ready(READY_TIMEOUT)

    def stop(self) -> None:
        """Every service, the highest rank first (callers before what they call)."""
        for rank in sorted({rank for _, rank in KINDS.values()}, reverse=True):
            stop_services([p for p in self.processes.values() if _rank(p) == rank])


def _rank(process: ServiceProcess) -> int:
    return next(rank for module, rank in KINDS.values() if module == process.module)


class StackBuilder:
    """What a test's stack runs. Without `broker(url)` the stack starts a nats-server of its own
    in `folder` (with `auth`, the platform's secured one: each service as its own NATS user)."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._url: str | None = None
        self._server_config: tuple[Path, Mapping[str, str]] | None = None
        self._credentials: Credentials | None = None
        self._env: dict[str, str] = {}
        self._services: list[tuple[str, str, dict[str, str]]] = []
        self._launchers: dict[str, tuple[str, ...]] = {}

    def broker(self, url: str, credentials: Credentials | None = None) -> StackBuilder:
        """A broker the test started (left running); with `credentials`, a secured one (its
        deploy/nats-auth.conf users): each service connects as its own user."""
        self._url = url
        self._credentials = credentials
        return self

    def auth(self, credentials: Credentials, config_file: Path, server_env: Mapping[str, str]) -> StackBuilder:
        """A secured broker of its own: `config_file` (deploy/nats-auth.conf, as written for the
        test) and the environment holding its users' passwords."""
        self._credentials = credentials
        self._server_config = (config_file, server_env)
        return self

    def apps(self, apps: dict[str, dict[str, Any]] | Path) -> StackBuilder:
        """The apps config (a path, or the entries to write in `folder`) every service reads."""
        path = apps if isinstance(apps, Path) else write_apps(self._folder, apps)
        return self.env(AURORA_APPS_CONFIG=str(path))

    def env(self, **env: str) -> StackBuilder:
        """Variables for every service."""
        self._env.update(env)
        return self

    def service(self, kind: str, tag: str | None = None, **env: str) -> StackBuilder:
        if kind not in KINDS:
            raise ValueError(f"no service kind {kind!r}; one of {sorted(KINDS)}")
        self._services.append((kind, tag or kind, env))
        return self

    def launched_by(self, tag: str, *launcher: str) -> StackBuilder:
        """Run service `tag` through a module that runs the service's module itself, e.g.
        `launched_by("gateway", "tests.bench.cpu_profiled", path)`: `python -m <launcher> <module>`."""
        self._launchers[tag] = launcher
        return self

    def bridge(self, **env: str) -> StackBuilder:
        return self.service("bridge", **env)

    def supervisor(self, **env: str) -> StackBuilder:
        return self.service("supervisor", **env)

    def gateway(self, **env: str) -> StackBuilder:
        return self.service("gateway", **env)

    def router(self, **env: str) -> StackBuilder:
        return self.service("router", **env)

    def scheduler(self, **env: str) -> StackBuilder:
        return self.service("scheduler", **env)

    def runners(self, count: int, **env: str) -> StackBuilder:
        for n in range(1, count + 1):
            self.service("runner", f"runner-{n}", **env)
        return self

    def edges(self, count: int, **env: str) -> StackBuilder:
        """`count` mcp-edge instances, each on a free port (`Stack.urls` holds their base URLs)."""
        for n in range(count):
            self.service("edge", f"edge-{n}", AURORA_EDGE_PORT=str(free_port("127.0.0.1")), **env)
        return self

    @contextmanager
    def running(self) -> Iterator[Stack]:
        with self._opened() as stack:
            for wave in self._waves(stack):
                for process in wave:
                    process.wait_ready(READY_TIMEOUT)
            yield stack

    @asynccontextmanager
    async def up(self) -> AsyncIterator[Stack]:
        """`running`, for a test whose event loop must go on while the services start (its own
        subscriptions hear them as they come up)."""
        with self._opened() as stack:
            for wave in self._waves(stack):
                await asyncio.gather(*(process.ready(READY_TIMEOUT) for process in wave))
            yield stack

    @contextmanager
    def _opened(self) -> Iterator[Stack]:
        """The stack with its broker and nothing started yet; on leaving, everything stopped."""
        (self._folder / "logs").mkdir(parents=True, exist_ok=True)
        server = None if self._url is not None else self._own_server()
        url = self._url or server.url  # type: ignore[union-attr]
        stack = Stack(url, self._folder, service_env(url, **self._env), self._credentials)
        stack.launchers.update(self._launchers)
        for kind, tag, env in self._services:
            if kind == "edge" and "AURORA_EDGE_PORT" in env:
                stack.urls[tag] = f"http://127.0.0.1:{env['AURORA_EDGE_PORT']}"
        try:
            yield stack
        finally:
            stack.stop()
            if server is not None:
                server.stop()

    def _waves(self, stack: Stack) -> Iterator[list[ServiceProcess]]:
        """The services launched a rank at a time: the next once the caller waited for these."""
        for rank in sorted({KINDS[kind][1] for kind, _, _ in self._services}):
            yield [stack._launch(kind, tag, None, env) for kind, tag, env in self._services if KINDS[kind][1] == rank]

    def _own_server(self) -> LocalNats:
        config, env = self._server_config or (None, None)
        server = LocalNats(self._folder / "jetstream", log_file=self._folder / "nats-server.log",
                           config_file=config, env=env)
        server.start()
        return server

