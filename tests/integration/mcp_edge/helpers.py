"""Helpers of the edge tests: agents, tokens, and the official SDK client with a bearer token."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.runs import ECHO

SUBJECTS = Subjects("amp")
ECHO_TOOL = f"{ECHO}.echo"
COUNTER_GET = f"{ECHO}.counter_get"
COUNTER_INC = f"{ECHO}.counter_increment"
FAIL = f"{ECHO}.fail"
LEGACY = "legacy"
MODERN = "2026-07-28"


async def agent(nc: NATS, agent_id: str, tools: list[str]) -> None:
    await admin_request(nc, SUBJECTS, "agents", "apply", {"document": {
        "kind": "Agent", "id": agent_id, "agent_kind": "llm", "tools": tools}}, timeout=20)


async def token(nc: NATS, agent_id: str, **extra: str) -> dict[str, Any]:
    created: dict[str, Any] = await admin_request(nc, SUBJECTS, "tokens", "create", {"agent": agent_id, **extra},
                                                  timeout=10)
    return created


def bearer(secret: str) -> httpx2.AsyncClient:
    return create_mcp_http_client(headers={"Authorization": f"Bearer {secret}"})


@asynccontextmanager
async def connected(url: str, secret: str, mode: str, *,
                    on_message: Callable[[Any], Awaitable[None]] | None = None) -> AsyncIterator[Client]:
    """The SDK's own client, as an external MCP client would use it (`mode`: legacy = 2025-11-25
    with `initialize`; a 2026 version: stateless)."""
    async with bearer(secret) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, message_handler=on_message, cache=None) as client:
            yield client


async def audit_records(nc: NATS) -> list[dict[str, Any]]:
    """Every audit record so far, oldest first, consuming nothing."""
    js = nc.jetstream()
    info = await js.stream_info("AMP_AUDIT")
    records: list[dict[str, Any]] = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg("AMP_AUDIT", seq)
        if msg.data:
            records.append(json.loads(msg.data))
    return records
