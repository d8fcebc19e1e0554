"""What a failed `initialize` says in the app's health, whatever part of the handshake raised it."""

from __future__ import annotations

from mcp.shared.exceptions import MCPError

from services.mcp_gateway.sessions.errors import InitializeFailed
from services.mcp_gateway.sessions.waits import Lost
from services.mcp_gateway.transports import generations
from services.mcp_gateway.transports.nats_stdio import NOT_RELAYED, ReportsNotRelayed
from services.mcp_gateway.transports.streamable_http import ReportsHttpErrors


def initialize_failure(exc: Exception, transport: object, lost_reason: str | None,
                       timeout: float) -> InitializeFailed | None:
    """What a failed `initialize` says in the app's health; None: not a failure of the
    handshake (raised as it is)."""
    if isinstance(transport, ReportsNotRelayed) and transport.not_relayed:
        # Nobody relays: the SDK's "Connection closed" and the attempt's loss only followed from it.
        return InitializeFailed(f"initialize not delivered: {NOT_RELAYED}", undelivered=True)
    http = transport.last_http_error if isinstance(transport, ReportsHttpErrors) else None
    if isinstance(exc, TimeoutError):
        return InitializeFailed(f"initialize did not finish within {timeout:g}s")
    if isinstance(exc, Lost):
        return InitializeFailed(f"initialize interrupted: {lost_reason}")
    if isinstance(exc, generations.NegotiationFailed):
        return InitializeFailed(f"{exc}: {http}" if http else str(exc))
    if isinstance(exc, MCPError):
        detail = f": {http}" if http else ""
        return InitializeFailed(f"initialize refused: {exc.message} (code {exc.code}){detail}", refused=http is None)
    return None
