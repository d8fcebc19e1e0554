"""What an A2A message becomes inside Aurora: an `a2a.message.received` platform event.

mcp-edge serves each agent over A2A v1.0 (services/mcp_edge/a2a/). An authenticated message is
published as a platform event of the edge (`aurora.edge`, signal kind `platform_event`), so the
event-bridge stores it and bindings route it like any event; the run it starts is the A2A task.
The `a2a.` namespace is reserved: only the edge may publish it, apps never.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from shared.contracts.signals import EDGE_APP

__all__ = ["A2A_MESSAGE_RECEIVED", "A2A_NAMESPACE", "EDGE_APP", "A2AMessageData", "A2APart"]
A2A_MESSAGE_RECEIVED = "a2a.message.received"
A2A_NAMESPACE = "a2a."

PartKind = Literal["text", "data", "file"]


class A2APart(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One part of the message: its text, its JSON data, or a file named by URL (never its bytes)."""

    kind: PartKind
    text: str | None = None
    data: Any = None
    url: str | None = None
    filename: str | None = None
    media_type: str | None = None


class A2AMessageData(msgspec.Struct, frozen=True, kw_only=True):
    """The event's `data`. `text` is every text part joined, for bindings and playbooks that
    only want the words; `parts` keeps them all, in order. `token_id` is the bearer token's id
    (the audit's `token:<id>` actor), never the secret."""

    agent: str
    text: str
    parts: tuple[A2APart, ...]
    context_id: str
    message_id: str  # the A2A message's own id, as the client sent it
    token_id: str

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data
