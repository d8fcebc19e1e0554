"""compose.yaml's own commands as local processes (no Docker here), the whole stack of
`docker compose up`: `creds-init`, nats (its compose command, sourcing the hashes), the demo
systems served over HTTP, every Aurora service with its compose environment and only its own
credentials file, then `demo-init` — each command parsed from the file, with NATS_URL, the
systems' host names and every published port rewritten to free local ones.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from aurora_cli.localnats import nats_server_binary
from shared.readiness import READY_FILE
from tests.harness.cli import AURORA
from tests.harness.cli_here import run_cli_here
from tests.harness.otlp import OtlpReceiver
from tests.harness.ports import free_port_run
from tests.harness.processes import REPO, ServiceProcess

COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text(encoding="utf-8"))
SERVICES: dict[str, Any] = COMPOSE["services"]
NOT_RUN = ("creds-init", "nats", "demo-init", "demo-init-llm")  # run on their own, around the others


def interpolate(value: str) -> str:
    """Compose's `${VAR:-default}` and `${VAR-default}` (the defaults: nothing is set here) and
    `$$` escapes."""
    value = re.sub(r"\$\{[A-Z_]+:?-([^}]*)\}", r"\1", value)
    return value.replace("$$", "$")


def mounts(service: dict[str, Any], volumes: dict[str, Path]) -> dict[str, Path]:
    """container path → local path, for named volumes (with subpaths) and binds of this repo."""
    found: dict[str, Path] = {}
    for mount in service.get("volumes", []):
        if isinstance(mount, str):
            source, target = mount.split(":")[:2]
            found[target] = (REPO / source) if source.startswith("./") else volumes[source]
        else:
            base = volumes[mount["source"]]
            found[mount["target"]] = base / mount.get("volume", {}).get("subpath", "")
    for secret in service.get("secrets", []):  # compose mounts each at /run/secrets/<target>
        source = secret if isinstance(secret, str) else secret["source"]
        target = source if isinstance(secret, str) else secret.get("target", source)
        found[f"/run/secrets/{target}"] = REPO / interpolate(COMPOSE["secrets"][source]["file"])
    return found


def localize(arg: str, where: dict[str, Path]) -> str:
    for target in sorted(where, key=len, reverse=True):
        arg = arg.replace(target, str(where[target]))
    return arg


def _runs(service: dict[str, Any], package: str) -> bool:
    """Does the service run `python -m <package>…`?"""
    command = service.get("command") or []
    return command[:2] == ["python", "-m"] and str(command[2]).startswith(package)


def healthy(url: str, process: subprocess.Popen[bytes] | ServiceProcess, log: Path, timeout: float = 60.0) -> None:
    """A compose health check (an HTTP GET of …/healthz), against the local port."""
    deadline = time.monotonic() + timeout
    while True:
        alive = process.poll() is None if isinstance(process, subprocess.Popen) else process.alive()
        if not alive:
            raise AssertionError(f"{url}: the process exited:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} never became healthy:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)


@dataclass
class ComposeStack:
    """Start with `start()`, stop with `stop()`; `ports` maps each compose port to its local one."""

    root: Path
    clean: dict[str, str] = field(default_factory=dict)
    ports: dict[int, int] = field(default_factory=dict)
    processes: list[ServiceProcess] = field(default_factory=list)
    server: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.volumes = {name: self.root / "volumes" / name for name in COMPOSE["volumes"]}
        for path in self.volumes.values():
            path.mkdir(parents=True, exist_ok=True)
        self.logs = self.root / "logs"
        self.logs.mkdir(exist_ok=True)
        self.clean = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "AURORA_", "CHAT_"))}
        self.clean["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.clean.get('PATH', '')}"
        # Below the kernel's ephemeral range: nats starts seconds after this (creds-init hashes first),
        # and a port from bind(0) was taken meanwhile by another worker's outgoing connection.
        published = (4222, 8222, 8765, 8766, 8780, 8795, 4318)
        first = free_port_run(len(published))
        self.ports = {port: first + i for i, port in enumerate(published)}
        # Jaeger's place: an OTLP receiver on the port the services export to.
        self.traces = OtlpReceiver(self.ports[4318])
        self.hosts = {name: "127.0.0.1" for name in SERVICES}

    @property
    def nats_url(self) -> str:
        return f"nats://127.0.0.1:{self.ports[4222]}"

    def local(self, port: int) -> str:
        return f"http://127.0.0.1:{self.ports[port]}"

    def rewrite(self, value: str) -> str:
        """A compose value with this machine's addresses: `host:port` of a compose service and
        `0.0.0.0` become 127.0.0.1 and the port's local stand-in; so does a bare published port."""
        def address(match: re.Match[str]) -> str:
            port = int(match.group(2))
            return f"127.0.0.1:{self.ports.get(port, port)}"

        names = "|".join(re.escape(n) for n in sorted(SERVICES, key=len, reverse=True))
        value = re.sub(rf"\b({names}|0\.0\.0\.0|127\.0\.0\.1):(\d+)", address, value)
        value = value.replace("0.0.0.0", "127.0.0.1")
        return str(self.ports[int(value)]) if value.isdigit() and int(value) in self.ports else value

    def operator_env(self) -> dict[str, str]:
        return {**self.clean, "NATS_URL": self.nats_url,
                "NATS_CREDS_ENV_FILE": str(self.volumes["aurora-creds"] / "operator.env")}

    def cli(self, *args: str, timeout: float = 60.0, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(AURORA), *args], env=env or self.operator_env(), cwd=REPO, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def cli_here(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The operator's CLI run in this process (tests/harness/cli_here.py)."""
        return run_cli_here(args, {k: v for k, v in self.operator_env().items() if k.startswith(("NATS_", "AURORA_"))})

    def demo_init_env(self) -> dict[str, str]:
        """demo-init's environment (the operator's credentials, the systems' addresses)."""
        return self._environment(SERVICES["demo-init"], "demo-init")

    # ------------------------------------------------------------------ start

    def start(self) -> None:
        self.traces.start()
        # The demo systems served over HTTP need neither NATS nor credentials: they boot while
        # creds-init hashes (seconds of CPU) and nats starts; the services start once they answer.
        apps = [self._app(name, service) for name, service in SERVICES.items()
                if name not in NOT_RUN and "profiles" not in service and _runs(service, "apps.")]
        self._creds_init()
        self._nats()
        for url, process in apps:
            healthy(url, process, process.log_path)
        started = [self._service(name, service) for name, service in SERVICES.items()
                   if _runs(service, "services.")]
        for process in started:
            process.wait_ready(timeout=90)  # its ready file, as the container's health check tests
        self._demo_init()

    def _creds_init(self) -> None:
        init = SERVICES["creds-init"]
        argv = [localize(a, mounts(init, self.volumes)) for a in init["command"]]
        done = subprocess.run([str(AURORA), *argv[1:]], env=self.clean, capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr

    def _nats(self) -> None:
        nats = SERVICES["nats"]
        where = mounts(nats, self.volumes)
        etc = self.root / "etc-nats"
        etc.mkdir(exist_ok=True)
        for target, source in list(where.items()):  # the container's /etc/nats, nats-auth.conf beside nats.conf
            if target.startswith("/etc/nats/"):
                shutil.copy(source, etc / Path(target).name)
                (etc / Path(target).name).chmod(0o600)
                where[target] = etc / Path(target).name
        command = [localize(interpolate(a), where) for a in nats["command"]]
        command[2] = command[2].replace("exec nats-server", f"exec {nats_server_binary()}")
        log = self.logs / "nats.log"
        with log.open("wb") as out:
            self.server = subprocess.Popen(
                [*command, "-a", "127.0.0.1", "-p", str(self.ports[4222]), "-m", str(self.ports[8222])],
                env={"PATH": self.clean["PATH"]}, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        healthy(f"http://127.0.0.1:{self.ports[8222]}/healthz?js-enabled-only=true", self.server, log)

    def _environment(self, service: dict[str, Any], name: str) -> dict[str, str]:
        where = mounts(service, self.volumes)
        env = {**self.clean, **{k: self.rewrite(localize(interpolate(str(v)), where))
                                for k, v in (service.get("environment") or {}).items()}}
        if "NATS_URL" in env:
            env["NATS_URL"] = self.nats_url
        if "OTEL_EXPORTER_OTLP_ENDPOINT" in env and not env["OTEL_EXPORTER_OTLP_ENDPOINT"]:
            # What a user sets with `--profile observability`; the receiver stands in for Jaeger.
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = self.rewrite("http://jaeger:4318")
        if env.get(READY_FILE):  # each container has its own /tmp; here they share one machine
            env[READY_FILE] = str(self.root / "ready" / name)
        return env

    def _app(self, name: str, service: dict[str, Any]) -> tuple[str, ServiceProcess]:
        """Start a demo system; its health check's URL (local) and its process."""
        args = [self.rewrite(interpolate(a)) for a in service["command"][3:]]
        process = ServiceProcess(service["command"][2], self._environment(service, name), self.logs, name, args=args)
        self.processes.append(process.start())
        test = " ".join(service["healthcheck"]["test"])
        url = re.search(r"http://[^'\"\s]+", test)
        assert url is not None, test
        return self.rewrite(url.group(0)), process

    def _service(self, name: str, service: dict[str, Any]) -> ServiceProcess:
        process = ServiceProcess(service["command"][2], self._environment(service, name), self.logs, name)
        self.processes.append(process.start())
        return process

    def _demo_init(self) -> None:
        self.demo_init_output = self.run_init("demo-init")

    def run_init(self, name: str) -> str:
        """Run a one-shot `aurora …` service of the file (`demo-init`, the llm profile's
        `demo-init-llm`) with its own environment and mounts; its output."""
        init = SERVICES[name]
        argv = [localize(a, mounts(init, self.volumes)) for a in init["command"]]
        assert argv[0] == "aurora"
        done = self.cli(*argv[1:], timeout=180, env=self._environment(init, name))
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    # ------------------------------------------------------------------ stop

    def stop(self) -> None:
        # Every process at once (each still gets SIGTERM and its grace): the test is over, so
        # the shutdown order matters less than not waiting for each in turn.
        with ThreadPoolExecutor(max_workers=max(len(self.processes), 1)) as pool:
            list(pool.map(lambda process: process.terminate(timeout=15), reversed(self.processes)))
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            self.server.wait(15)
        self.traces.stop()
