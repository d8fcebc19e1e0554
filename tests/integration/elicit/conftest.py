"""A stack for apps that ask back during their calls: nats-server, bridge, supervisor (the chat app
with its web page, the elicit test app over stdio), the same app over Streamable HTTP — twice:
once as configured by default (`protocol: auto`, which speaks 2026-07-28, stateless: the app asks
in the call's result) and once pinned to the handshake (2025-11-25: the app asks by a request
during the call) — the gateway (answers wait at most ELICIT_TIMEOUT seconds), the router and one runner (its default
model is the fake OpenAI-compatible server)."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localnats import LocalNats, free_port
from shared.admin import admin_request
from shared.subjects import Subjects
from tests.fakes.openai_server import FakeOpenAI
from tests.harness.chat_webhook import SECRET_ENV, WEBHOOK_SECRET
from tests.harness.clients import nats_client
from tests.harness.ports import wait_listening
from tests.harness.processes import ServiceProcess, service_env, stop_services
from tests.integration.runner.helpers import APPS, CHAT, CHAT_PLATFORM, PYTHON, REPO, RUNNER_ENV, stdio, write_apps

ELICIT = "test.elicit"  # over stdio, through the supervisor
ELICIT_HTTP = "test.elicit_http"  # over Streamable HTTP, `protocol: auto`: stateless (2026-07-28)
ELICIT_HANDSHAKE = "test.elicit_handshake"  # the same HTTP app, `protocol: handshake` (2025-11-25)
# Each way an app asks back: stdio and HTTP handshake (requests to the gateway's callbacks), and
# HTTP stateless (an InputRequiredResult the gateway answers and calls again with).
GENERATIONS = [ELICIT, ELICIT_HANDSHAKE, ELICIT_HTTP]
PROTOCOL = {ELICIT: "2025-11-25", ELICIT_HANDSHAKE: "2025-11-25", ELICIT_HTTP: "2026-07-28"}


async def protocol_of(nc: NATS, app: str) -> str | None:
    """The MCP revision the gateway's session with `app` speaks (as its health shows it)."""
    sessions = await admin_request(nc, Subjects(), "gateway", "apps")
    return next((s["protocol"] for s in sessions if s["app"] == app), None)
ELICIT_TIMEOUT = 8.0


@dataclass
class Stack:
    url: str
    chat_log: Path
    chat_web: str  # the chat app's page: POST /events is its webhook
    processes: dict[str, ServiceProcess]
    fake: FakeOpenAI


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("elicit-stack")
    fake = FakeOpenAI().start()
    server = LocalNats(folder / "jetstream", log_file=folder / "nats-server.log")
    server.start()
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
    env = service_env(server.url, AURORA_APPS_CONFIG=str(config))
    logs = folder / "logs"
    logs.mkdir()
    processes: dict[str, ServiceProcess] = {}
    try:
        wait_listening(http_app, http_port, "the HTTP elicit app", timeout=30)
        processes["bridge"] = ServiceProcess("services.event_bridge", env, logs, "bridge").start()
        processes["supervisor"] = ServiceProcess("services.app_supervisor", env, logs, "supervisor").start()
        processes["gateway"] = ServiceProcess("services.mcp_gateway", {
            **env, "AURORA_ELICITATION_TIMEOUT_SECONDS": str(ELICIT_TIMEOUT)}, logs, "gateway").start()
        processes["router"] = ServiceProcess("services.router", env, logs, "router").start()
        processes["runner"] = ServiceProcess("services.runner", {
            **env, **RUNNER_ENV, "AURORA_RUNNER_TOOL_TIMEOUT_SECONDS": "30", "AURORA_RUNNER_INSTANCE": "runner-1",
            "AURORA_MODEL_BASE_URL": fake.base_url, "AURORA_MODEL": "fake-model"}, logs, "runner").start()
        processes["gateway"].wait_for_log('"serving"', timeout=40)
        processes["runner"].wait_for_log('"ready"', timeout=30)
        processes["router"].wait_for_log('"ready"', timeout=30)
        yield Stack(server.url, chat_log, f"http://127.0.0.1:{web_port}", processes, fake)
    finally:
        stop_services(processes.values())
        http_app.terminate()
        http_app.wait(10)
        log.close()
        server.stop()
        fake.stop()


@pytest.fixture
async def snc(stack: Stack) -> AsyncIterator[NATS]:
    async with nats_client(stack.url) as client:
        yield client
