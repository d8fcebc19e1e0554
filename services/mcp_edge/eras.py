"""Which era of MCP a request without a session speaks, told from its body: an `initialize`
opens a 2025-11-25 session; a request naming its version in `_meta` is 2026-07-28 or later, and
must say so in its `MCP-Protocol-Version` header too (`http_app` routes on that header, as the
SDK does)."""

from __future__ import annotations

from typing import Any

from mcp_types import PROTOCOL_VERSION_META_KEY
from mcp_types.jsonrpc import HEADER_MISMATCH

from shared.bounded_json import BadJson, loads_bounded


def initialize_of(body: bytes) -> dict[str, Any] | None:
    """The params of an `initialize` request, or None when the body is something else."""
    try:
        message = loads_bounded(body)
    except BadJson:
        return None
    if isinstance(message, dict) and message.get("method") == "initialize":
        params = message.get("params")
        return params if isinstance(params, dict) else {}
    return None


def without_version_header(body: bytes) -> dict[str, Any] | None:
    """The refusal of a request that names its protocol version only in `_meta` (2026-07-28 and
    later) and not in `MCP-Protocol-Version`: that era's header is required, and a missing one is
    a header mismatch (400, -32020). The SDK routes by the header alone, so it would serve such a
    request as the oldest stateless era; None for any other body."""
    try:
        message = loads_bounded(body)
    except BadJson:
        return None
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or PROTOCOL_VERSION_META_KEY not in meta:
        return None
    message_text = f"the MCP-Protocol-Version header is missing: it must repeat {PROTOCOL_VERSION_META_KEY}"
    request_id = message.get("id")
    return {"jsonrpc": "2.0", "id": request_id if isinstance(request_id, (str, int)) else None,
            "error": {"code": HEADER_MISMATCH, "message": message_text}}
