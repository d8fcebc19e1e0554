"""The stack a chaos scenario runs on: real processes, each of which a scenario may kill.

A nats-server with a file store (optionally with extra server configuration, e.g. a small
`max_file_store`), and on it, built by the tests' one `StackBuilder` (tests/harness/stack.py),
the event-bridge, the supervisor with the chat app (which logs every message it sends), the echo
app and whatever misbehaving apps the scenario adds, the gateway, the router and N runners, each
waited for until it serves (its ready file). The server is the scenario's to kill and restart,
so the builder is given it as a broker it did not start.
"""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from aurora_cli.localnats import LocalNats
from tests.harness.processes import REPO, ServiceProcess, service_env
from tests.harness.runner_stack import RUNNER_ENV, chat_log_of, stack_apps
from tests.harness.stack import Stack, StackBuilder


class Server(Protocol):
    """What the stack needs of its NATS: one `LocalNats`, or a cluster of them whose `url` is
    the comma-separated list of its nodes' URLs (services take such a list in NATS_URL)."""

    @property
    def url(self) -> str: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def kill(self) -> None: ...


@dataclass(frozen=True)
class StackSpec:
    runners: int = 2
    apps: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # added to chat and echo
    nats_config: str | None = None  # text of a nats-server config file


# Stacks not stopped yet: killed at exit, so that an interrupted `make chaos` leaves no process.
_LIVE: set[ChaosStack] = set()


@atexit.register
def _kill_leftovers() -> None:
    for stack in list(_LIVE):
        stack.kill_all()


class ChaosStack:
    """`server`, when given, replaces the one nats-server (a scenario on a cluster passes its
    cluster); the stack starts and stops it like its own."""

    def __init__(self, workdir: Path, spec: StackSpec, server: Server | None = None) -> None:
        self.workdir = workdir
        self.spec = spec
        self.logs = workdir / "logs"
        self.chat_log = chat_log_of(workdir)
        config_file = None
        if spec.nats_config is not None:
            config_file = workdir / "nats-server.conf"
            config_file.parent.mkdir(parents=True, exist_ok=True)
            config_file.write_text(spec.nats_config, encoding="utf-8")
        self.server: Server = server or LocalNats(workdir / "jetstream", log_file=workdir / "nats-server.log",
                                                  config_file=config_file)
        self.slow_stops: list[str] = []
        self._running: Stack | None = None
        self._builder_exit = ExitStack()  # the builder's `running()`, left by `stop`

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def runners(self) -> list[str]:
        return [f"runner-{n}" for n in range(1, self.spec.runners + 1)]

    @property
    def processes(self) -> dict[str, ServiceProcess]:
        """Each service by its name (bridge, supervisor, gateway, router, runner-<n>)."""
        return self._running.processes if self._running is not None else {}

    def builder(self) -> StackBuilder:
        apps = stack_apps(self.chat_log)
        # As apps/config.yml declares it: the chat app deduplicates a send on its idempotency key,
        # so a reply whose answer was lost can be sent again safely.
        apps["chat"]["mcp"]["idempotency_key_tools"] = ["send_message"]
        return (StackBuilder(self.workdir).broker(self.server.url).apps({**apps, **self.spec.apps})
                .bridge().supervisor().gateway().router().runners(self.spec.runners, **RUNNER_ENV))

    def start(self) -> ChaosStack:
        _LIVE.add(self)
        self.server.start()
        self._running = self._builder_exit.enter_context(self.builder().running())
        return self

    def kill(self, name: str) -> None:
        """SIGKILL the service (its whole process group: a supervisor takes its apps with it)."""
        self.processes[name].kill()

    def revive(self, name: str) -> None:
        """Start a killed service again with its own environment, as an orchestrator would."""
        self.processes[name].start()

    def kill_nats(self) -> None:
        self.server.kill()

    def start_nats(self) -> None:
        self.server.start()

    def log(self, name: str) -> str:
        return self.processes[name].logs()

    def cli(self, *args: str, timeout: float = 30.0) -> Any:
        """Run the `aurora` CLI as an operator would, with `--json`; its parsed output."""
        env = service_env(self.url, PYTHONIOENCODING="utf-8")
        done = subprocess.run([sys.executable, "-m", "aurora_cli.main", *args, "--json"], capture_output=True,
                              text=True, env=env, cwd=REPO, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"aurora {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
        return json.loads(done.stdout)

    def stop(self) -> None:
        """SIGTERM every service at once, each timed (the shutdown order is not what a chaos run
        measures, and stopping one by one doubled a scenario's time; a service slow to stop is a
        finding), then leave the builder's stack (nothing left to stop) and stop the server."""
        with ThreadPoolExecutor(max_workers=len(self.processes) or 1) as pool:
            list(pool.map(self._stop_one, self.processes))
        self._builder_exit.close()
        self.server.stop()
        _LIVE.discard(self)

    def _stop_one(self, name: str) -> None:
        began = time.monotonic()
        code = self.processes[name].terminate(timeout=8)
        if time.monotonic() - began > 5:
            self.slow_stops.append(f"{name} took {time.monotonic() - began:.0f}s to stop (exit {code})")

    def kill_all(self) -> None:
        for process in self.processes.values():
            process.kill()
        self.server.kill()
        _LIVE.discard(self)
