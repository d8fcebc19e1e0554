"""`<p>.edge.ask.<task id>`: an app's request to its client during an mcp-edge call, relayed by
the gateway to the mcp-edge instance serving that call, which asks its own MCP client.

The edge call's task id (`edge-<hex>`, one per external call) names the subject: the instance
holding the call listens there while the call is open, so nothing else needs to know which
instance that is. The request carries the MCP method and its params as the app sent them; the
reply is the client's result (an MCP result object), or why there is none: the client's
JSON-RPC error, or Aurora's own refusal (`code` says which: `no_capability`, `stateless_client`,
`client_error`, `client_timeout`, …).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Method = Literal["elicitation/create", "sampling/createMessage"]


class EdgeAsk(msgspec.Struct, frozen=True, kw_only=True):
    method: Method
    params: dict[str, Any]
    timeout_seconds: float  # how long the edge may wait for its client (the call's time left)
    app: str  # the app that asked, for the edge's logs


class EdgeAskError(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str


class EdgeAnswer(msgspec.Struct, frozen=True, kw_only=True):
    result: dict[str, Any] | None = None
    error: EdgeAskError | None = None


_ask = msgspec.json.Decoder(EdgeAsk)
_answer = msgspec.json.Decoder(EdgeAnswer)


def encode(message: EdgeAsk | EdgeAnswer) -> bytes:
    return msgspec.json.encode(message)


def decode_ask(data: bytes) -> EdgeAsk:
    return _ask.decode(data)


def decode_answer(data: bytes) -> EdgeAnswer:
    return _answer.decode(data)
