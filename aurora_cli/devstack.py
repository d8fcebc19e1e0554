"""The local stack behind `aurora dev`: an embedded nats-server plus every service, no Docker.

Start order follows the dependencies (nats → bridge → supervisor → gateway → router → runner),
but `aurora dev` holds the supervisor — the apps that emit events — until the demo is applied
(`start(hold=…)`, then `start_held()`); stop order is the exact reverse of the dependency
order: the runners first, NATS last.
Each service runs as `python -m services.<name>` in its own session (so the terminal's Ctrl-C
reaches only this launcher, which then stops them in order); its output is written raw to
`<data-dir>/logs/<service>.log` and shown on the terminal, prefixed and made readable.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.text import Text

from aurora_cli.clienv import URL_FILE, dev_data_dir
from aurora_cli.creds import CLIENT_USERS, SERVICE_USERS, Credentials, password_variable
from aurora_cli.devcluster import MAX_NODES, default_replicas, dev_cluster, wait_until_ready
from aurora_cli.devsecurity import AUTH_CONFIG, INSECURE_WARNING, DevSecurity, DevSecurityError
from aurora_cli.localnats import LocalNats
from aurora_cli.people import PID_FILE
from shared.config.service_env import SECRETS_DIR_ENV, service_environment
from shared.errors import AuroraError

# Dependency order. A service folder that is not listed here starts after these, by name.
START_ORDER = ("event_bridge", "app_supervisor", "mcp_gateway", "router", "runner", "mcp_edge")
COLORS = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan", "bright_magenta")
READY_MESSAGE = "started"  # what `shared.service.run_service` logs once connected
EXIT_OUTPUT_WAIT = 3.0  # seconds an exited service's last output may take to reach the terminal
_LOG_KEYS_SHOWN_ELSEWHERE = ("ts", "level", "service", "logger", "msg")


class DevStackError(AuroraError):
    """The local stack cannot start (port taken, nats-server missing …)."""


# Kept importable from here: tests and tools name them through the dev stack.
NATS_USERS = SERVICE_USERS
__all__ = ["AUTH_CONFIG", "CLIENT_USERS", "NATS_USERS", "Credentials", "DevSecurityError", "password_variable"]


@dataclass(frozen=True)
class ServiceSpec:
    """One process of the stack: `name` is the folder under services/, `argv` the command."""

    name: str
    argv: tuple[str, ...]
    # Apps that are not Aurora services (e.g. an HTTP example app) are ready when they listen.
    ready_port: int | None = None

    @property
    def label(self) -> str:
        return self.name.replace("_", "-")


def services_root() -> Path:
    """The `services/` package folder of this checkout or installation."""
    spec = importlib.util.find_spec("services")
    if spec is None or not spec.submodule_search_locations:
        raise DevStackError("the `services` package cannot be found: run `make install`")
    return Path(next(iter(spec.submodule_search_locations)))


def discover_services(root: Path | None = None) -> list[str]:
    """Every `services/<name>/__main__.py`, in dependency (start) order."""
    base = root if root is not None else services_root()
    names = [p.parent.name for p in base.glob("*/__main__.py") if not p.parent.name.startswith(("_", "."))]

    def rank(name: str) -> tuple[int, str]:
        return (START_ORDER.index(name) if name in START_ORDER else len(START_ORDER), name)

    return sorted(names, key=rank)


def service_specs(names: Sequence[str], python: str = sys.executable) -> list[ServiceSpec]:
    return [ServiceSpec(name, (python, "-m", f"services.{name}")) for name in names]


# Example apps served over HTTP start before the services (the gateway connects to them; stdio
# apps are the supervisor's). apps/config.yml finds the notes app at this port; the asset
# register (an HTTP system, deploy/demo/00-assets-tools.yml) at AURORA_ASSETS_URL.
NOTES_PORT = 8765
ASSETS_PORT = 8766
# The chat app (a stdio app) serves its page and webhook here (apps/config.yml, CHAT_WEB_PORT).
CHAT_PAGE = "http://127.0.0.1:8780/"


def chat_page(env: Mapping[str, str]) -> str:
    """The chat page's address as the banner shows it: CHAT_WEB_PORT's when it names a port."""
    port = env.get("CHAT_WEB_PORT", "").strip()
    return f"http://127.0.0.1:{port}/" if port.isdigit() and int(port) > 0 else CHAT_PAGE


def chat_curl_lines(page: str, body: str) -> list[str]:
    """How to post `body` (JSON) to the chat page from a shell, as the banner shows it: sign in
    as a free user (the page's session cookie, kept in a cookie file), then post as that user.
    Posting as a chosen user takes the signed webhook (docs/guides/chat-page.md)."""
    jar = "/tmp/aurora-chat.cookies"
    return [f"curl -s -c {jar} -XPOST {page}session -H 'content-type: application/json' -d '{{}}'"
            "   # sign in as a free user",
            f"curl -s -b {jar} -XPOST {page}events -H 'content-type: application/json' -d '{body}'"]


def example_app_specs(python: str = sys.executable, notes_port: int = NOTES_PORT,
                      assets_port: int = ASSETS_PORT) -> list[ServiceSpec]:
    return [ServiceSpec("aurora_app_notes", (python, "-m", "apps.aurora_app_notes", "--host", "127.0.0.1",
                                             "--port", str(notes_port)), ready_port=notes_port),
            ServiceSpec("aurora_app_assets", (python, "-m", "apps.aurora_app_assets", "--host", "127.0.0.1",
                                              "--port", str(assets_port)), ready_port=assets_port)]


def format_log_line(line: str) -> str:
    """A JSON log line as `HH:MM:SS.mmm level message key=value …`; anything else unchanged."""
    text = line.rstrip("\r\n")
    try:
        entry = json.loads(text)
    except ValueError:
        return text
    if not isinstance(entry, dict) or "msg" not in entry:
        return text
    clock = str(entry.get("ts", ""))[11:23]
    fields = " ".join(
        f"{key}={_field(value)}" for key, value in entry.items() if key not in _LOG_KEYS_SHOWN_ELSEWHERE
    )
    parts = [clock, f"{entry.get('level', '')!s:<7}", str(entry["msg"]), fields]
    return " ".join(part for part in parts if part).rstrip()


def _field(value: Any) -> str:
    if isinstance(value, str):
        return value if value and " " not in value else json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, default=str)


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


class SessionNats(LocalNats):
    """LocalNats in its own session, like the services.

    The terminal sends Ctrl-C to its whole foreground process group; a nats-server in that
    group would die at once, before the services had drained, breaking the shutdown order.
    """

    own_session = True


@dataclass
class _Running:
    spec: ServiceSpec
    process: subprocess.Popen[bytes]
    log: IO[bytes]
    color: str
    ready: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None
    reported_exit: bool = False


class DevStack:
    """NATS and the services as child processes; `start()`, `wait(stop)`, `stop()`.

    `stop()` is idempotent and safe after a partial start. `unexpected_exits` names every
    service that exited while nobody asked it to.

    Secure by default (`aurora_cli.devsecurity`): nats-server runs deploy/nats-auth.conf with
    the bcrypt hashes of credentials kept in `<data-dir>/creds/`, and each service is given the
    path of its own credentials file, example apps nothing. `insecure=True` is the loud opt-out;
    `tls=True` adds a local CA and TLS (`<data-dir>/tls/`).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int = 4222,
        host: str = "127.0.0.1",
        specs: Sequence[ServiceSpec] | None = None,
        console: Console | None = None,
        env: Mapping[str, str] | None = None,
        ready_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        cwd: Path | None = None,
        notes_port: int = NOTES_PORT,
        assets_port: int = ASSETS_PORT,
        insecure: bool = False,
        tls: bool = False,
        cluster: int = 1,
    ) -> None:
        if not 1 <= cluster <= MAX_NODES:
            raise DevStackError(f"--cluster {cluster}: a dev cluster has from 1 to {MAX_NODES} nodes")
        self.data_dir = data_dir.resolve()
        self.logs_dir = self.data_dir / "logs"
        self.port = port
        self.host = host
        self.specs = (list(specs) if specs is not None
                      else [*example_app_specs(notes_port=notes_port, assets_port=assets_port),
                            *service_specs(discover_services())])
        self.notes_port = notes_port
        self.assets_port = assets_port
        self.console = console or Console(highlight=False, soft_wrap=True)
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.cwd = cwd or services_root().parent
        self._base_env = dict(os.environ if env is None else env)
        self.security = DevSecurity(self.data_dir, self.cwd / AUTH_CONFIG, insecure=insecure, tls=tls)
        self.security.check(self._base_env, [s.name for s in self.specs if s.ready_port is None])
        self.credentials: Credentials | None = None  # read or made by start()
        # `--cluster N`: N nodes; `self.nats` is the first (the CLI's default URL reaches it).
        self.cluster = dev_cluster(self.data_dir, cluster, port=port, host=host,
                                   config_file=self.security.server_config,
                                   env=self.security.server_env(self._base_env),
                                   node_factory=SessionNats) if cluster > 1 else None
        self.nats = self.cluster.nodes[0] if self.cluster is not None else SessionNats(
            self.data_dir / "jetstream", port=port, host=host, log_file=self.logs_dir / "nats.log",
            config_file=self.security.server_config, env=self.security.server_env(self._base_env),
        )
        self._running: list[_Running] = []
        self._held: list[ServiceSpec] = []  # named in start(hold=…), started by start_held()
        self._print_lock = threading.Lock()
        self._stopping = False
        self.unexpected_exits: list[str] = []
        self.stop_order: list[str] = []

    @property
    def url(self) -> str:
        """NATS_URL for the services: every node's URL, comma-separated, on a cluster."""
        return self.cluster.url if self.cluster is not None else self.nats.url

    @property
    def servers(self) -> list[LocalNats]:
        return list(self.cluster.nodes) if self.cluster is not None else [self.nats]

    @property
    def insecure(self) -> bool:
        return self.security.insecure

    # ------------------------------------------------------------------ start

    def start(self, stop: threading.Event | None = None, *, hold: Collection[str] = ()) -> None:
        """NATS first, then each service in order, each given time to say it started; the
        services named in `hold` wait for `start_held()` (`aurora dev` holds the ingress until
        the demo is applied)."""
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        for server in self.servers:
            if not port_is_free(self.host, server.port):
                raise DevStackError(
                    f"port {server.port} on {self.host} is in use: is another `aurora dev` or nats-server "
                    "running? Stop it or choose another with --port"
                )
        if self.insecure:
            self.alert(INSECURE_WARNING)
        self.credentials, created = self.security.prepare()
        for server in self.servers:  # now with the hashes prepare() made
            server.env = self.security.server_env(self._base_env)
        if self.credentials is not None:
            kept = len(self.credentials.passwords) - len(created)
            self.say("nats", "bold", f"credentials in {self.security.creds_dir}/ ({len(created)} made, {kept} kept); "
                     "nats-server holds only their bcrypt hashes")
        mode = f", config {self.nats.config_file}" if self.nats.config_file else ""
        tls = ", TLS (CA " + str(self.security.ca_file) + ")" if self.security.tls else ""
        if self.cluster is not None:
            self.say("nats", "bold", f"starting a cluster of {self.cluster.size} nats-servers on {self.url} "
                     f"(stores under {self.cluster.store_root}{mode}{tls}; routes on loopback, own password)")
            self.cluster.start()
            wait_until_ready(self.client_env("operator"))
        else:
            self.say("nats", "bold", f"starting nats-server on {self.url} (store {self.nats.store_dir}{mode}{tls})")
            self.nats.start()
        if self.nats.pid is not None:  # `aurora users` signals it to reload when people change
            (self.data_dir / PID_FILE).write_text(f"{self.nats.pid}\n", encoding="utf-8")
        # The CLI lends this folder's credentials to this server only (aurora_cli/clienv.py).
        (self.data_dir / URL_FILE).write_text(f"{self.url}\n", encoding="utf-8")
        self._held = [spec for spec in self.specs if spec.name in hold]
        self._start_all([spec for spec in self.specs if spec.name not in hold], stop)

    def start_held(self, stop: threading.Event | None = None) -> None:
        """Start the services `start()` held back (once)."""
        held, self._held = self._held, []
        self._start_all(held, stop)

    def _start_all(self, specs: Sequence[ServiceSpec], stop: threading.Event | None) -> None:
        for spec in specs:
            if stop is not None and stop.is_set():
                return
            self._start_service(spec, COLORS[self.specs.index(spec) % len(COLORS)], stop)

    def _child_env(self, spec: ServiceSpec | None = None) -> dict[str, str]:
        service = spec.name if spec is not None and spec.ready_port is None else None
        # Only what this process needs and was declared to use, none of the shell's other secrets.
        own = service_environment(spec.name if spec is not None else None, self._base_env, self.cwd)
        if service == "mcp_gateway" and not own.get(SECRETS_DIR_ENV):
            own[SECRETS_DIR_ENV] = str(self.secrets_dir())
        env = self.security.child_env(own, service)
        env.update({"NATS_URL": self.url, "PYTHONUNBUFFERED": "1",
                    "AURORA_NOTES_URL": f"http://127.0.0.1:{self.notes_port}/mcp"})
        if self.cluster is not None and not env.get("AURORA_STREAM_REPLICAS"):
            env["AURORA_STREAM_REPLICAS"] = default_replicas(self.cluster.size)
        # apps/config.yml starts stdio apps as `python …`: the venv's python, whatever the PATH.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        return env

    def secrets_dir(self) -> Path:
        """The gateway's secrets folder unless AURORA_SECRETS_DIR names one: a file put here is a
        secret an HTTP system may name (`auth: {value_file: <its name>}`)."""
        folder = self.data_dir / "secrets"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder

    def pids(self) -> dict[str, int]:
        """Each started process's id, by label."""
        return {r.spec.label: r.process.pid for r in self._running}

    def client_env(self, user: str = "operator") -> dict[str, str]:
        """What a client sets to reach this stack as `user` (the URL, its credentials file, the CA)."""
        return {"NATS_URL": self.url, "AURORA_ASSETS_URL": self.assets_url, **self.security.client_env(user)}

    @property
    def assets_url(self) -> str:
        """Where the asset register listens (the demo's HTTP system's base_url)."""
        return f"http://127.0.0.1:{self.assets_port}"

    def _start_service(self, spec: ServiceSpec, color: str, stop: threading.Event | None) -> None:
        log = open(self.logs_dir / f"{spec.label}.log", "ab")  # noqa: SIM115 - closed in stop()
        try:
            process = subprocess.Popen(
                list(spec.argv), cwd=self.cwd, env=self._child_env(spec), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            )
        except OSError as exc:
            log.close()
            self.alert(f"{spec.label} could not be started: {exc}")
            self.unexpected_exits.append(spec.label)
            return
        running = _Running(spec, process, log, color)
        running.reader = threading.Thread(target=self._pump, args=(running,), name=f"log-{spec.label}",
                                          daemon=True)
        running.reader.start()
        self._running.append(running)
        deadline = time.monotonic() + self.ready_timeout
        while not running.ready.wait(0.05):
            if spec.ready_port is not None and not port_is_free(self.host, spec.ready_port):
                break
            if process.poll() is not None or (stop is not None and stop.is_set()):
                break
            if time.monotonic() > deadline:
                self.alert(f"{spec.label} did not log {READY_MESSAGE!r} within {self.ready_timeout:.0f}s; "
                           "going on")
                break
        self.check()

    def _pump(self, running: _Running) -> None:
        """Copy a service's output to its log file and, made readable, to the terminal."""
        stream = running.process.stdout
        assert stream is not None
        for raw in iter(stream.readline, b""):
            running.log.write(raw)
            running.log.flush()
            line = raw.decode("utf-8", errors="replace")
            if _is_ready_line(line):
                running.ready.set()
            self.say(running.spec.label, running.color, format_log_line(line))
        stream.close()

    # ------------------------------------------------------------------ run

    def check(self) -> None:
        """Report, once and loudly, every process that exited on its own."""
        if self._stopping:
            return
        for running in self._running:
            code = running.process.poll()
            if code is not None and not running.reported_exit:
                running.reported_exit = True
                if running.reader is not None:  # its last lines (why it exited) come before the alert
                    running.reader.join(timeout=EXIT_OUTPUT_WAIT)
                self.unexpected_exits.append(running.spec.label)
                self.alert(f"{running.spec.label} exited on its own with code {code}; the others keep "
                           f"running. Its log: {self.logs_dir / (running.spec.label + '.log')}")
        for index, server in enumerate(self.servers):
            label = "nats" if self.cluster is None else f"nats-{index}"
            if not server.running and label not in self.unexpected_exits:
                self.unexpected_exits.append(label)
                log = server.log_file or self.logs_dir / "nats.log"
                self.alert(f"nats-server {label} exited on its own; its log: {log}")

    def wait(self, stop: threading.Event, poll: float = 0.2) -> None:
        """Watch the processes until `stop` is set (by Ctrl-C or SIGTERM)."""
        while not stop.wait(poll):
            self.check()

    # ------------------------------------------------------------------ stop

    def stop(self, *, force: bool = False) -> None:
        """Stop the services in reverse start order (SIGTERM, then SIGKILL after the grace
        period), then nats-server; idempotent."""
        self._stopping = True
        # The reverse of the dependency order, whatever order they started in: a held supervisor
        # still stops after the gateway, whose sessions it waits to see closed.
        for running in sorted(self._running, key=lambda r: self.specs.index(r.spec), reverse=True):
            label = running.spec.label
            if running.process.poll() is None:
                self.say(label, running.color, "stopping")
                self._terminate(running.process, 0.0 if force else self.stop_timeout, label)
            self.stop_order.append(label)
            _kill_group(running.process.pid)  # children a service left behind
            if running.reader is not None:
                running.reader.join(timeout=2.0)
            running.log.close()
        self._running.clear()
        for server in self.servers:
            if server.running:
                self.say("nats", "bold", f"stopping nats-server {server.url}")
            server.stop(timeout=1.0 if force else self.stop_timeout)  # idempotent, also after a crash
        if "nats" not in self.stop_order:
            self.stop_order.append("nats")

    def _terminate(self, process: subprocess.Popen[bytes], grace: float, label: str) -> None:
        try:
            process.send_signal(signal.SIGTERM)
            process.wait(grace)
        except subprocess.TimeoutExpired:
            self.alert(f"{label} did not stop within {grace:.0f}s; killing it")
            _kill_group(process.pid)
            process.wait()

    # ------------------------------------------------------------------ output

    def say(self, label: str, style: str, message: str) -> None:
        """Print `message` with the service's prefix on every line (tracebacks included)."""
        lines = message.splitlines() or [""]
        text = Text("\n").join(Text.assemble((f"{label:>14} │ ", style), line) for line in lines)
        with self._print_lock:
            self.console.print(text)

    def alert(self, message: str) -> None:
        with self._print_lock:
            self.console.print(Text(f"!!! {message}", style="bold red"))

    def own_chat_page(self) -> str | None:
        """The chat page's address, when it is a known port (not CHAT_WEB_PORT=0: any free one)."""
        return None if self._base_env.get("CHAT_WEB_PORT", "").strip() == "0" else chat_page(self._base_env)

    def banner(self, aurora: str = "aurora", *, demo: str | None = None) -> str:
        env = "" if self.port == 4222 and self.host == "127.0.0.1" else f"NATS_URL={self.url} "
        names = ", ".join(r.spec.label for r in self._running if r.process.poll() is None) or "none"
        if self.data_dir != (Path.cwd() / dev_data_dir(os.environ)).resolve():  # the only one the CLI finds itself
            env += "".join(f"{k}={v} " for k, v in self.security.client_env("operator").items())
        if self.insecure:
            secure = [f"  !!! {INSECURE_WARNING}"]
        else:
            secure = [f"  users     one per service, credentials kept in {self.security.creds_dir}/ "
                      "(operator.env: the CLI's; consumer.env: an external reader's)"]
        if self.security.tls:
            secure.append(f"  TLS       clients verify the server against {self.security.ca_file} (NATS_TLS_CA)")
        message = json.dumps({"type": "message.received", "session_id": "group_1",
                              "text": "设备 C-3 最近的告警和资产档案"}, ensure_ascii=False)
        page = chat_page(self._base_env)
        try_lines = [
            f"  open {page}   # the chat page: type 设备 C-3 最近的告警和资产档案",
            *(f"  {line}" for line in chat_curl_lines(page, message)),
            f"  curl -s {page}conversations/group_1   # the relay's answer, naming both sources",
            f"  {env}{aurora} tasks list                 # the demo agents' tasks",
            f"  {env}{aurora} events tail",
        ] if demo is not None else [
            f"  {env}{aurora} events tail",
            f"  {env}{aurora} events emit message.received --app im.polaris.qq --data '{{\"text\":\"你好\"}}'",
            f"  {env}{aurora} streams",
        ]
        return "\n".join([
            "Aurora dev stack is up",
            f"  NATS      {self.url}   (JetStream store {self.nats.store_dir})" if self.cluster is None else
            f"  NATS      a cluster of {self.cluster.size}: {self.url}   (stores under {self.cluster.store_root}; "
            f"streams with {self._child_env().get('AURORA_STREAM_REPLICAS')} replicas)",
            f"  services  {names}",
            f"  logs      {self.logs_dir}/",
            *([f"  demo      {demo}"] if demo is not None else []),
            *secure,
            "Try, in another terminal:",
            *try_lines,
            "Ctrl-C stops everything.",
        ])


def _is_ready_line(line: str) -> bool:
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    return isinstance(entry, dict) and entry.get("msg") == READY_MESSAGE


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
