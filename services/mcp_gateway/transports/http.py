"""Streamable HTTP to a remote app; its url and header values may reference env vars (`${VAR}`,
`${VAR:-default}`), expanded at connect time so a missing variable is the session's error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from shared.appconfig import expand_env


@asynccontextmanager
async def http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[TransportStreams]:
    resolved = {name: expand_env(value) for name, value in headers.items()}
    async with (
        create_mcp_http_client(headers=resolved) as client,
        streamable_http_client(expand_env(url), http_client=client) as streams,
    ):
        yield streams[0], streams[1]
