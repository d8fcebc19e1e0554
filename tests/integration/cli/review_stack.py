"""The stack of the `aurora tools suggest` and `tools edit` tests: nats-server, a real supervisor and
gateway serving one app under `governance: review` (its tools are drafts), and the scripted
OpenAI-compatible server as the model a reviewer asks."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import yaml

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.fakes.openai_server import Conversation, FakeOpenAI, Turn
from tests.harness.cli import Cli, cli_here_runner
from tests.harness.stack import StackBuilder


@dataclass
class ReviewStack:
    cli: Cli
    fake: FakeOpenAI
    url: str
    package: str
    folder: Path  # the stack's own folder (the test's files beside its logs)

    def ok(self, *args: str, **env: str) -> str:
        result = self.cli(*args, COLUMNS="200", **env)
        assert result.returncode == 0, f"aurora {' '.join(args)} → {result.returncode}\n{result.stderr}"
        return result.stdout

    def tool(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.ok("tools", "show", name, "--json"))
        return found

    def restart_app(self) -> None:
        async def restart() -> None:
            nc = await nats.connect(self.url)
            try:
                await admin_request(nc, Subjects("amp"), "supervisor", "restart",
                                    {"app": self.package, "reason": "the test changes the app"}, timeout=15)
            finally:
                await nc.close()
        asyncio.run(restart())


@contextmanager
def review_stack(folder: Path, package: str, app_script: Path,
                 app_env: dict[str, str] | None = None) -> Iterator[ReviewStack]:
    config = folder / "apps.yml"
    mcp: dict[str, Any] = {"command": [sys.executable, str(app_script)]}
    if app_env:
        mcp["env"] = app_env
    config.write_text(yaml.safe_dump({"apps": {package.rsplit(".", 1)[-1]: {
        "package": package, "governance": "review", "mcp": mcp}}}), encoding="utf-8")
    fake = FakeOpenAI().start()
    try:
        with StackBuilder(folder).apps(config).supervisor().gateway().running() as stack:
            yield ReviewStack(cli_here_runner(stack.url), fake, stack.url, package, folder)
    finally:
        fake.stop()


def reviewer(wording: dict[str, Any], preface: str = "") -> Callable[[Conversation], Turn]:
    """The model's answer: `wording` as a JSON block, after `preface`."""
    def script(chat: Conversation) -> Turn:
        return chat.answer(preface + "```json\n" + json.dumps(wording) + "\n```")
    return script
