"""compose.yaml run by a real Docker engine (tests/harness/docker_engine.py), as a user runs it:
`docker compose` with the committed file, under a project name of its own. The only addition is
an override file that publishes each published port on a free one of this machine (the test
must not take the ports a developer's `aurora dev` or another test holds); nothing else of the
file is changed. The chat page is reached as its own script reaches it (`ChatPage`).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from aurora_cli.localnats import free_ports
from tests.harness.chat_webhook import signed
from tests.harness.processes import REPO
from tests.harness.waiting import poll_sync

COMPOSE_FILE = REPO / "compose.yaml"


def published_ports() -> dict[str, list[tuple[str, int, int]]]:
    """service → its published ports in compose.yaml, as (host address, host port, container port)."""
    services: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))["services"]
    found: dict[str, list[tuple[str, int, int]]] = {}
    for name, service in services.items():
        for spec in service.get("ports", []):
            address, host, container = str(spec).split(":")
            found.setdefault(name, []).append((address, int(host), int(container)))
    return found


@dataclass
class ComposeProject:
    """One `docker compose -p <name>` project of compose.yaml; `port(8780)` is where the container
    port that compose.yaml publishes is reachable from this machine."""

    env: dict[str, str]
    folder: Path
    name: str = field(default_factory=lambda: f"aurora-test-{uuid.uuid4().hex[:8]}")
    ports: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        published = published_ports()
        free = iter(free_ports(sum(len(specs) for specs in published.values())))
        lines = ["services:"]
        for service, specs in published.items():
            mapped = []
            for address, _, container in specs:
                self.ports[container] = next(free)
                mapped.append(f'"{address}:{self.ports[container]}:{container}"')
            lines += [f"  {service}:", f"    ports: !override [{', '.join(mapped)}]"]
        self.override = self.folder / "free-ports.override.yaml"
        self.override.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def url(self, container_port: int) -> str:
        return f"http://127.0.0.1:{self.ports[container_port]}"

    def compose(self, *args: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = ["docker", "compose", "-p", self.name, "-f", str(COMPOSE_FILE), "-f", str(self.override), *args]
        done = subprocess.run(command, env=self.env, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                              check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"`docker compose {' '.join(args)}` exited {done.returncode}:\n"
                                 f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}\n{self.logs_tail()}")
        return done

    def operator(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """`aurora <args>` in the image with the operator's credentials, as demo-init runs it
        (`docker compose run --rm demo-init aurora …`, a user's way to the CLI of the stack)."""
        return self.compose("run", "--rm", "--no-deps", "--no-TTY", "demo-init", "aurora", *args, timeout=timeout,
                            check=False)

    def docker(self, *args: str, timeout: float = 60.0) -> str:
        done = subprocess.run(["docker", *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                              check=False)
        assert done.returncode == 0, f"docker {' '.join(args)}: {done.stderr[-3000:]}"
        return done.stdout

    def docker_run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """`docker run …` on the project's engine; the caller judges the outcome."""
        return subprocess.run(["docker", "run", *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def containers(self) -> list[dict[str, Any]]:
        """Every container of the project, running or exited: compose's JSON lines."""
        out = self.compose("ps", "--all", "--format", "json").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def state(self, container_id: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.docker("inspect", container_id))[0]
        return found

    def logs(self, container_id: str) -> str:
        done = subprocess.run(["docker", "logs", container_id], env=self.env, capture_output=True, text=True,
                              timeout=60, check=False)
        return done.stdout + done.stderr

    def logs_tail(self, chars: int = 6000) -> str:
        done = subprocess.run(["docker", "compose", "-p", self.name, "-f", str(COMPOSE_FILE), "-f", str(self.override),
                               "logs", "--no-color", "--timestamps"],
                              env=self.env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
        return done.stdout[-chars:]

    @property
    def log_folder(self) -> Path:
        """Where compose.log is, written as the containers' output is now: a failed test's report
        ends with it (tests/conftest.py reads a fixture's `log_folder`)."""
        self.save_logs()
        return self.folder

    def save_logs(self) -> None:
        """Every container's output into the folder (compose.log), for a failed test's report."""
        done = subprocess.run(["docker", "compose", "-p", self.name, "-f", str(COMPOSE_FILE), "-f", str(self.override),
                               "logs", "--no-color", "--timestamps"],
                              env=self.env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
        (self.folder / "compose.log").write_text(done.stdout + done.stderr, encoding="utf-8")

    def volumes(self) -> list[str]:
        return self.docker("volume", "ls", "--quiet", "--filter", f"label=com.docker.compose.project={self.name}"
                           ).split()

    def down(self) -> subprocess.CompletedProcess[str]:
        return self.compose("down", "--volumes", "--remove-orphans", timeout=180, check=False)


class ChatPage:
    """The chat page as a user reaches it at the address compose.yaml publishes
    (http://127.0.0.1:8780, whatever free port the test mapped it to): every request carries that
    `Host` (the page answers 403 to any other), and `Origin` unless a caller says otherwise."""

    def __init__(self, local: str, address: str) -> None:
        self.address = address  # "127.0.0.1:8780": what a browser on this machine sends as Host
        self.origin = f"http://{address}"
        self.client = httpx.Client(base_url=local, headers={"Host": address}, timeout=10)

    def close(self) -> None:
        self.client.close()

    def get(self, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.client.get(path, headers=headers)

    def post_signed(self, body: dict[str, Any], secret: str) -> httpx.Response:
        """A webhook post (an IM platform's, a script's) signed as docs/guides/chat-page.md says."""
        raw, headers = signed(body, secret)
        return self.client.post("/events", content=raw, headers=headers)

    def post_unsigned(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
        """A post with no signature and no page session, from a page of its own origin."""
        with httpx.Client(base_url=self.client.base_url, headers={"Host": self.address}, timeout=10) as fresh:
            return fresh.post("/events", json=body, headers={"Origin": self.origin, **(headers or {})})

    def connected(self) -> bool:
        """Has the platform connected to the chat app (until then its webhook answers 503)?"""
        try:
            reply = self.client.get("/healthz")
        except httpx.TransportError:  # the published port's proxy answers before the page listens
            return False
        return reply.status_code == 200 and reply.json().get("connected") is True

    def ask(self, conversation: str, text: str, secret: str) -> None:
        """`text` from u1 in `conversation` through the signed webhook, once the app takes events."""
        poll_sync(self.connected, timeout=60, interval=0.2, what="the platform connecting to the chat app")
        body = {"type": "message.received", "session_id": conversation, "text": text, "user_id": "u1"}

        def accepted() -> bool:
            reply = self.post_signed(body, secret)  # signed anew: a signature is accepted once
            if reply.status_code == 503:  # the connection to the platform is being made again
                return False
            assert reply.status_code == 202, f"{reply.status_code}: {reply.text}"
            return True

        # Once a second at most, as its Retry-After asks: a signature is of the second it was made.
        poll_sync(accepted, timeout=60, what="the chat webhook accepting a message", interval=1.0)

    def replies(self, conversation: str) -> list[dict[str, Any]]:
        reply = self.client.get(f"/conversations/{conversation}", headers={"Origin": self.origin})
        assert reply.status_code == 200, f"{reply.status_code}: {reply.text}"
        return [i for i in reply.json()["items"] if i["kind"] == "message" and i["direction"] == "out"]

    def answer_to(self, conversation: str, timeout: float = 60.0) -> str:
        """The text of the first reply in `conversation`, once there is one."""
        found = poll_sync(lambda: self.replies(conversation) or None, timeout=timeout, interval=0.2,
                          what=f"an answer in {conversation}")
        return str(found[0]["text"])
