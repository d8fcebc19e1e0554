"""A remote MCP app over Streamable HTTP that speaks exactly one generation of the protocol.

    python tests/apps/generations_app.py --generation stateless --port P   # 2026-07-28 only
    python tests/apps/generations_app.py --generation handshake --port P   # 2025-11-25 only

`stateless` refuses `initialize` (and anything not stamped 2026-07-28) the way a 2026-only
server does: HTTP 400 with JSON-RPC error -32022 naming the versions it supports; its list
changes go only to `subscriptions/listen` streams. `handshake` refuses 2026-07-28 requests the
way a 2025 server does (400, "Unsupported protocol version") and sends list changes on its
session's standalone stream. Both offer the same small catalog of business tools, `echo` (which
says which generation answered) and `add_tool` (registers a tool at runtime and announces it).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

READ = ToolAnnotations(read_only_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


def build(generation: str) -> MCPServer:
    mcp: MCPServer = MCPServer(f"aurora-test-{generation}", version="1.0.0", log_level="WARNING")

    @mcp.tool(annotations=READ)
    def echo(text: str) -> dict[str, Any]:
        """Return the text and the protocol generation that served the call."""
        return {"text": text, "generation": generation}

    @mcp.tool(annotations=READ)
    def track_shipment(tracking_number: str) -> dict[str, Any]:
        """Track a parcel shipment: carrier, delivery status and estimated arrival of a tracking number."""
        return {"tracking_number": tracking_number, "carrier": "SF Express", "status": "in transit",
                "eta": "2026-12-03"}

    @mcp.tool(annotations=READ)
    def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
        """Convert an amount of money from one currency to another at today's exchange rate."""
        return {"amount": round(amount * 0.14, 2), "currency": to_currency, "from": from_currency}

    @mcp.tool(annotations=READ)
    def weather_forecast(city: str, days: int = 3) -> dict[str, Any]:
        """Weather forecast for a city: temperature and rain for the next days."""
        return {"city": city, "days": [{"day": d, "high_c": 20 + d} for d in range(days)]}

    @mcp.tool(annotations=WRITE)
    def create_invoice(customer: str, amount: float) -> dict[str, Any]:
        """Create an invoice for a customer and return its number."""
        return {"invoice": "INV-0001", "customer": customer, "amount": amount}

    @mcp.tool(annotations=READ)
    def public_holidays(country: str, year: int) -> dict[str, Any]:
        """List the public holidays of a country in a year."""
        return {"country": country, "year": year, "holidays": ["01-01"]}

    @mcp.tool(annotations=WRITE)
    async def add_tool(ctx: Context, name: str, reply: str = "ok") -> dict[str, Any]:
        """Register read-only tool `name` (answers `reply`) and announce that the tool list changed."""

        def dynamic_tool(text: str = "") -> str:
            return f"{reply}{text}"

        mcp.add_tool(dynamic_tool, name=name, description=f"A tool added at runtime ({generation}).",
                     annotations=READ)
        if generation == "stateless":
            await ctx.notify_tools_changed()  # to every open subscriptions/listen stream
        else:
            await ctx.session.send_tool_list_changed()  # on the session's standalone stream
        return {"added": name}

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "generation": generation})

    mcp.custom_route("/healthz", methods=["GET"])(healthz)
    return mcp


def only(generation: str, app: ASGIApp) -> ASGIApp:
    """Refuse every MCP request of the other generation, as a server that speaks only this one."""
    served = MODERN_PROTOCOL_VERSIONS if generation == "stateless" else HANDSHAKE_PROTOCOL_VERSIONS

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") == "/healthz":
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1") or None
        if generation == "stateless" and scope["method"] != "POST":
            await _send(send, 405, {"error": "2026-07-28 has no standalone stream or session to delete"})
            return
        if (version in served) or (version is None and generation == "handshake"):
            await app(scope, receive, send)
            return
        body = await _body(receive)
        request_id = _request_id(body)
        if generation == "stateless":
            error = {"code": -32022, "message": "Unsupported protocol version",
                     "data": {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": version or "initialize"}}
        else:
            error = {"code": -32600, "message": f"Bad Request: Unsupported protocol version: {version}"}
        await _send(send, 400, {"jsonrpc": "2.0", "id": request_id, "error": error})

    return guarded


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message: Message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _request_id(body: bytes) -> Any:
    try:
        decoded = json.loads(body)
    except ValueError:
        return None
    return decoded.get("id") if isinstance(decoded, dict) else None


async def _send(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--generation", choices=("stateless", "handshake"), required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    server = build(args.generation)
    app = only(args.generation, server.streamable_http_app(host="127.0.0.1"))
    # A listen stream stays open until its client goes: shut down without waiting for it.
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", timeout_graceful_shutdown=1)


if __name__ == "__main__":
    main()
