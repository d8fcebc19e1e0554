"""Remote A2A agents for the tests: tests/apps/a2a_agent.py (the official a2a-sdk server
classes) run as processes of their own, each on a free port, each message they are sent (and
each cancel) appended to one log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aurora_cli.localnats import free_port
from tests.harness.ports import wait_listening

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def a2a_agents(folder: Path, *options: tuple[str, ...]) -> Iterator[list[str]]:
    """One agent per entry of `options` (its command-line flags: `--streaming`, `--token T`);
    their base URLs, in order. The log is `folder / "messages.jsonl"` (`agent_log`)."""
    started: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for flags in options:
            port = free_port("127.0.0.1")
            output = folder / f"agent-{port}.log"
            with output.open("wb") as out:  # the child keeps its own descriptor
                process = subprocess.Popen(
                    [sys.executable, str(REPO / "tests/apps/a2a_agent.py"), "--port", str(port), *flags], cwd=REPO,
                    env={**os.environ, "A2A_AGENT_LOG": str(folder / "messages.jsonl")},
                    stdout=out, stderr=subprocess.STDOUT)
            started.append(process)
            wait_listening(process, port, "the A2A test agent", log=output, timeout=30)
            urls.append(f"http://127.0.0.1:{port}")
        yield urls
    finally:
        for process in started:
            process.terminate()
            process.wait(10)


def agent_log(folder: Path) -> list[dict[str, Any]]:
    """Every entry the agents of `folder` logged so far: `{message_id, skill, text, metadata}`
    per message, `{canceled: task id}` per cancel."""
    path = folder / "messages.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
