"""What the tests of apps that ask back share: the apps' packages, the protocol each speaks, and
the running stack (tests/integration/elicit/conftest.py builds it)."""

from __future__ import annotations

from dataclasses import dataclass

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.runner_stack import RunnerStack

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


ELICIT_TIMEOUT = 8.0  # seconds the gateway waits for an answer to an app's question


@dataclass
class ElicitStack(RunnerStack):
    chat_web: str = ""  # the chat app's page: POST /events is its webhook
