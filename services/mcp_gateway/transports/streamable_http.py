"""Streamable HTTP to a remote app; its url and header values may reference env vars (`${VAR}`,
`${VAR:-default}`), expanded at connect time so a missing variable is the session's error."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

import httpx2
from mcp.client.streamable_http import streamable_http_client

from services.mcp_gateway.transports.streams import TransportStreams
from shared.config.appconfig import expand_env


@runtime_checkable
class ReportsHttpErrors(Protocol):
    """A transport that remembers the last HTTP error status it got."""

    last_http_error: str | None


class HttpTransport(AbstractAsyncContextManager[TransportStreams]):
    """The SDK's Streamable HTTP client. The SDK turns a non-2xx answer into a generic
    "Server returned an error response"; `last_http_error` keeps what the server said
    ("HTTP 401 Unauthorized") so a session's reason names it. Header values never appear."""

    def __init__(self, url: str, headers: dict[str, str], env: Mapping[str, str]) -> None:
        self.last_http_error: str | None = None
        self._streams = self._open(url, headers, env)

    async def __aenter__(self) -> TransportStreams:
        return await self._streams.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._streams.__aexit__(exc_type, exc, tb)

    @asynccontextmanager
    async def _open(self, url: str, headers: dict[str, str], env: Mapping[str, str]) -> AsyncIterator[TransportStreams]:
        resolved = {name: expand_env(value, env) for name, value in headers.items()}

        async def remember(response: Any) -> None:
            if response.status_code >= 400:
                self.last_http_error = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()

        async with httpx2.AsyncClient(headers=resolved, timeout=_TIMEOUT) as client:
            client.event_hooks["response"] = [*client.event_hooks.get("response", []), remember]
            async with streamable_http_client(expand_env(url, env), http_client=client) as streams:
                yield streams[0], streams[1]


# The SDK's recommended timeouts for a client of its own (connect/write/pool 30 s; reading 300 s,
# since a server may hold a response stream open). `streamable_http_client` takes any
# `httpx2.AsyncClient`; building ours keeps the headers and the hook without the SDK's private module.
_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


def http_transport(url: str, headers: dict[str, str], env: Mapping[str, str]) -> HttpTransport:
    """`env`: the variables the url and headers reference, as the gateway's settings read them."""
    return HttpTransport(url, headers, env)
