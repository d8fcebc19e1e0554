"""A stack for apps that ask back during their calls: nats-server, bridge, supervisor (the chat app
with its web page, the elicit test app over stdio), the same app over Streamable HTTP — twice:
once as configured by default (`protocol: auto`, which speaks 2026-07-28, stateless: the app asks
in the call's result) and once pinned to the handshake (2025-11-25: the app asks by a request
during the call) — the gateway (answers wait at most ELICIT_TIMEOUT seconds), the router and one runner (its default
model is the fake OpenAI-compatible server)."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator

import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localnats import free_port
from tests.fakes.openai_server import FakeOpenAI
from tests.harness.chat_webhook import SECRET_ENV, WEBHOOK_SECRET
from tests.harness.ports import wait_listening
from tests.harness.runs import APPS, CHAT, CHAT_PLATFORM, PYTHON, REPO, RUNNER_ENV, stdio, write_apps
from tests.harness.stack import StackBuilder
from tests.integration.elicit.helpers import (
    ELICIT,
    ELICIT_HANDSHAKE,
    ELICIT_HTTP,
    ELICIT_TIMEOUT,
    ElicitStack,
)


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ElicitStack]:
    folder = tmp_path_factory.mktemp("elicit-stack")
    fake = FakeOpenAI().start()
    http_port, web_port = free_port(), free_port()
    log = (folder / "elicit-http.log").open("wb")
    http_app = subprocess.Popen([PYTHON, str(APPS / "elicit_app.py"), "--port", str(http_port)], cwd=REPO,
                                stdout=log, stderr=subprocess.STDOUT)
    chat_log = folder / "chat-sent.jsonl"
    config = write_apps(folder, {
        "chat": stdio([PYTHON, "-m", "apps.aurora_app_chat"], package=CHAT, platform=CHAT_PLATFORM,
                      mcp={"env": {"CHAT_LOG_FILE": str(chat_log), "CHAT_WEB_PORT": str(web_port),
                                   SECRET_ENV: WEBHOOK_SECRET}}),
        "elicit": stdio([PYTHON, str(APPS / "elicit_app.py")], package=ELICIT),
        "elicit_http": {"package": ELICIT_HTTP,
                        "mcp": {"transport": "streamable_http", "url": f"http://127.0.0.1:{http_port}/mcp"}},
        "elicit_handshake": {"package": ELICIT_HANDSHAKE, "mcp": {
            "transport": "streamable_http", "url": f"http://127.0.0.1:{http_port}/mcp", "protocol": "handshake"}},
    })
    try:
        wait_listening(http_app, http_port, "the HTTP elicit app", timeout=30)
        builder = (StackBuilder(folder).apps(config).bridge().supervisor()
                   .gateway(AURORA_ELICITATION_TIMEOUT_SECONDS=str(ELICIT_TIMEOUT)).router()
                   .runners(1, **{**RUNNER_ENV, "AURORA_RUNNER_TOOL_TIMEOUT_SECONDS": "30",
                                  "AURORA_MODEL_BASE_URL": fake.base_url, "AURORA_MODEL": "fake-model"}))
        with builder.running() as running:
            yield ElicitStack(running, chat_log, fake, chat_web=f"http://127.0.0.1:{web_port}")
    finally:
        http_app.terminate()
        http_app.wait(10)
        log.close()
        fake.stop()


@pytest.fixture
async def snc(stack: ElicitStack) -> AsyncIterator[NATS]:
    async with stack.client() as client:
        yield client
