"""`tokens.*`: create (the token is in this one reply, never again), list, revoke."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from services.mcp_edge.tokens import TokenError, TokenStore, expiry, new_token
from shared.clock import now_iso
from shared.nats.admin_service import AdminHandler, AdminRequestError

AgentExists = Callable[[str], Awaitable[bool]]


def _text(body: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise AdminRequestError("invalid_request", f"{key!r} must be a non-empty string")
    return value.strip()


def token_endpoints(tokens: TokenStore, agent_exists: AgentExists) -> dict[str, AdminHandler]:
    async def create(body: dict[str, Any]) -> dict[str, Any]:
        agent = _text(body, "agent")
        assert agent is not None
        name = _text(body, "name", required=False) or ""
        try:
            expires_at = expiry(_text(body, "expires", required=False))
        except TokenError as exc:
            raise AdminRequestError(exc.code, str(exc)) from exc
        if not await agent_exists(agent):
            raise AdminRequestError("unknown_agent", f"no agent {agent!r}: apply it first (aurora apply -f ...)")
        token, record = new_token(agent, name, expires_at)
        await tokens.create(record)
        return {**record.public(), "token": token, "endpoint_path": f"/agents/{agent}/mcp"}

    async def listing(body: dict[str, Any]) -> dict[str, Any]:
        agent = _text(body, "agent", required=False)
        found = [t.public() for t in await tokens.all() if agent is None or t.agent == agent]
        return {"tokens": found}

    async def revoke(body: dict[str, Any]) -> dict[str, Any]:
        token_id = _text(body, "id")
        assert token_id is not None
        record = await tokens.get(token_id) if token_id.isalnum() else None
        if record is None:
            raise AdminRequestError("not_found", f"no token {token_id!r}")
        if record.revoked_at is None:
            record = msgspec.structs.replace(record, revoked_at=now_iso())
            await tokens.put(record)
        return record.public()

    return {"create": create, "list": listing, "revoke": revoke}
