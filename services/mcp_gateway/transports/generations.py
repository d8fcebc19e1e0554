"""The two generations of MCP a session may speak, and what differs between them for the gateway.

- **handshake** (2025-11-25 and earlier): `initialize` opens a session; liveness is `ping`; the
  server sends list-changed notifications whenever it likes.
- **stateless** (2026-07-28): no handshake and no session — every request carries its protocol
  version, client info and capabilities in `_meta` (the SDK stamps them once it has adopted a
  `server/discover` result); `ping` is gone, so liveness asks `server/discover` again; and change
  notifications arrive only on a `subscriptions/listen` stream the client opened, which has no
  replay: when it drops, the gateway connects again and lists again.

`auto` (the default for a remote app) asks `server/discover` first and takes any error that is not
positive evidence of a 2026-only server as "speak the handshake", as the SDK's own `Client` does.
The stream notifications themselves still pass the transport tap, so the session handles a
list change of either generation the same way.
"""

from __future__ import annotations

import contextlib
from typing import Literal

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.subscriptions import SubscriptionLost, listen
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from shared.errors import AuroraError

Protocol = Literal["auto", "handshake", "stateless"]


class NegotiationFailed(AuroraError):
    """The app answered, but no generation both sides speak could be agreed on."""

    def __init__(self, reason: str, error: MCPError | None = None) -> None:
        super().__init__(reason)
        self.error = error


class StreamEnded(AuroraError):
    """The app's `subscriptions/listen` stream ended: its changes are not seen until it is reopened."""


class ListenRefused(AuroraError):
    """The stateless app does not offer `subscriptions/listen`: its list changes cannot be seen."""


def is_stateless(session: ClientSession) -> bool:
    return session.protocol_version in MODERN_PROTOCOL_VERSIONS


async def negotiate(session: ClientSession, protocol: Protocol) -> str:
    """Agree on a generation with the app; the protocol version in use. Raises MCPError when the
    handshake itself is refused (the caller reports it), NegotiationFailed when discover is."""
    if protocol == "handshake":
        await session.initialize()
    elif protocol == "stateless":
        try:
            await session.discover()
        except MCPError as exc:
            raise NegotiationFailed(f"server/discover refused: {exc.message} (code {exc.code})", exc) from exc
        except (RuntimeError, ValidationError) as exc:
            raise NegotiationFailed(f"server/discover gave no usable 2026-07-28 answer: {exc}") from exc
    else:
        await _auto(session)
    version = session.protocol_version
    assert version is not None  # initialize/discover adopted one, or raised
    return version


async def _auto(session: ClientSession) -> None:
    try:
        await session.discover()
        return
    except MCPError as exc:
        supported = _supported_of(exc)
        if supported is not None and not any(v in HANDSHAKE_PROTOCOL_VERSIONS for v in supported):
            # A 2026-only server that speaks none of our modern versions: a handshake would be refused too.
            raise NegotiationFailed(f"the app speaks only {', '.join(supported)}; the gateway speaks "
                                    f"{', '.join((*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS))}",
                                    exc) from exc
    except (RuntimeError, ValidationError):
        pass  # discover answered, but with no modern version we speak: a legacy advertisement
    await session.initialize()


def _supported_of(exc: MCPError) -> list[str] | None:
    if exc.code != types.UNSUPPORTED_PROTOCOL_VERSION:
        return None
    try:
        return types.UnsupportedProtocolVersionErrorData.model_validate(exc.error.data).supported
    except ValidationError:
        return None


async def probe(session: ClientSession) -> None:
    """One liveness check: `ping` on a handshake session, `server/discover` on a stateless one
    (2026-07-28 removed ping)."""
    if is_stateless(session):
        version = session.protocol_version
        assert version is not None
        await session.send_discover(version)
    else:
        await session.send_ping()


async def follow_changes(session: ClientSession, ack_timeout: float) -> None:
    """Hold a `subscriptions/listen` stream open for the three list changes; returns never while
    it is open. The events themselves reach the session through the transport tap; reading them
    here only keeps the SDK's backlog empty. Raises ListenRefused when the app will not open one,
    StreamEnded when an open stream ends — the session is then made again, since nothing replays
    what was missed."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            with anyio.fail_after(ack_timeout):
                subscription = await stack.enter_async_context(listen(
                    session, tools_list_changed=True, resources_list_changed=True, prompts_list_changed=True))
        except TimeoutError as exc:
            raise StreamEnded(f"subscriptions/listen was not acknowledged within {ack_timeout:g}s") from exc
        except MCPError as exc:
            if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):  # the app went away, not a no
                raise StreamEnded(f"subscriptions/listen failed: {exc.message}") from exc
            raise ListenRefused(f"the app refused subscriptions/listen: {exc.message} (code {exc.code}); "
                                "its list changes are not seen") from exc
        except SubscriptionLost as exc:
            raise StreamEnded("the subscriptions/listen stream ended before it was acknowledged") from exc
        try:
            async for _ in subscription:
                pass
        except SubscriptionLost as exc:
            raise StreamEnded("the app's subscriptions/listen stream dropped") from exc
    raise StreamEnded("the app closed its subscriptions/listen stream")
