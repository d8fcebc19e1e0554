"""A transport wrapper that shows every message the server sends to an observer first.

The SDK drops notification methods it does not know; observing at the transport means
vendor notifications and `aurora/event` are seen whatever the SDK does with them. A
notification the supervisor wants confirmed once stored comes with its receipt token
(`ReceiptedMessage`); the observer gets it, else None.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification

from services.mcp_gateway.transports.streams import TransportStreams
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.tap")

NotificationObserver = Callable[[str, dict[str, Any] | None, str | None], Awaitable[None]]


@asynccontextmanager
async def tapped(
    inner: AbstractAsyncContextManager[TransportStreams],
    on_notification: NotificationObserver,
    on_closed: Callable[[], None] | None = None,
    on_unreadable: Callable[[Exception], Awaitable[None]] | None = None,
) -> AsyncIterator[TransportStreams]:
    """Relay `inner`'s read stream through the observer; `on_closed` runs when it ends;
    `on_unreadable` hears of every message the transport could not read (not JSON-RPC)."""
    async with inner as (inner_read, inner_write):
        writer, reader = anyio.create_memory_object_stream[SessionMessage | Exception](256)

        async def relay() -> None:
            async with writer:
                async for item in inner_read:
                    if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCNotification):
                        try:
                            await on_notification(item.message.method, item.message.params,
                                                  getattr(item, "receipt", None))
                        except Exception:
                            log.exception("notification observer failed", method=item.message.method)
                    elif isinstance(item, Exception) and on_unreadable is not None:
                        try:
                            await on_unreadable(item)
                        except Exception:
                            log.exception("unreadable-output observer failed")
                    try:
                        await writer.send(item)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return
            if on_closed is not None:
                on_closed()

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay, name="mcp-tap")
            try:
                yield reader, inner_write
            finally:
                tg.cancel_scope.cancel()
                await reader.aclose()
