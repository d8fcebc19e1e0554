"""`aurora dev` as a person runs it, for the e2e tests: the launcher in a session of its own (so
Ctrl-C reaches the whole group), its output kept, the CLI as the operator it made credentials for."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from aurora_cli.localnats import free_port
from shared.config.envfile import parse_env_text
from tests.harness.cli import AURORA, Cli, cli_runner
from tests.harness.cli_here import run_cli_here
from tests.harness.processes import REPO, descendants, service_env
from tests.harness.waiting import TimedOut, poll_sync


class DevProcess:
    def __init__(self, data_dir: Path, port: int, log: Path, env: Mapping[str, str] | None = None) -> None:
        """`env`: variables the person set before `aurora dev` (AURORA_MODEL_BASE_URL …)."""
        self.url = f"nats://127.0.0.1:{port}"
        self.log = log
        self.creds = data_dir / "creds"
        # The chat page and mcp-edge on any free port (0) unless `env` names one: other stacks may run beside.
        env = {**service_env(self.url), "CHAT_WEB_PORT": "0", "AURORA_EDGE_PORT": "0", **(env or {})}
        env.pop("NATS_URL")  # `aurora dev` sets it for its children
        with log.open("wb") as out:
            # Its own session, like a terminal's foreground job: Ctrl-C goes to the whole group.
            self.process = subprocess.Popen(
                [str(AURORA), "dev", "--data-dir", str(data_dir), "--port", str(port),
                 "--notes-port", str(free_port()), "--assets-port", str(free_port())],
                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def cli(self) -> Cli:
        """The CLI as the operator, with the credentials `aurora dev` made at its first start."""
        run = cli_runner(self.url)

        def as_operator(*args: str, timeout: float = 30.0, **env: str) -> subprocess.CompletedProcess[str]:
            return run(*args, timeout=timeout, NATS_CREDS_ENV_FILE=str(self.creds / "operator.env"), **env)

        return as_operator

    def cli_here(self) -> Cli:
        """The same, run in the test's process: for the many reads and polls of a test."""
        env = {"NATS_URL": self.url, "NATS_CREDS_ENV_FILE": str(self.creds / "operator.env")}

        def as_operator(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
            return run_cli_here(args, env)

        return as_operator

    def password(self, user: str) -> str:
        return parse_env_text((self.creds / f"{user}.env").read_text(), source=user)["NATS_PASSWORD"]

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_until_up(self, timeout: float = 180.0) -> None:
        """`aurora dev` starts its eight processes one after another; on two cores shared with the
        rest of the suite each can take many seconds to start, so the bound is generous (the wait
        ends as soon as the stack says it is up)."""
        def up() -> bool:
            if "Aurora dev stack is up" in self.output():
                return True
            if self.process.poll() is not None:
                raise AssertionError(f"aurora dev exited with {self.process.returncode}:\n{self.output()}")
            return False

        try:
            poll_sync(up, timeout=timeout, what="aurora dev to come up", interval=0.1)
        except TimedOut:
            raise AssertionError(f"aurora dev never came up:\n{self.output()}") from None

    def ctrl_c(self, timeout: float = 90.0) -> int:
        os.killpg(self.process.pid, signal.SIGINT)
        return self.process.wait(timeout)

    def kill(self) -> None:
        # Find the children first: once the launcher is gone they belong to init, and they run
        # in sessions of their own, so neither its pid nor its group would reach them.
        children = descendants(self.process.pid)
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
