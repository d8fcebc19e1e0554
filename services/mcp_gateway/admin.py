"""The gateway's admin endpoints (`<p>.admin.gateway.*`): apps, tools, LLM tool descriptions."""

from __future__ import annotations

from typing import Any

import msgspec

from services.mcp_gateway.gateway import Gateway
from services.mcp_gateway.schema_adapter import llm_tools
from services.mcp_gateway.session import CallTimedOut, SessionUnavailable
from shared.admin import AdminHandler, AdminRequestError


def admin_endpoints(gateway: Gateway) -> dict[str, AdminHandler]:
    async def apps(_: dict[str, Any]) -> list[dict[str, Any]]:
        return [msgspec.to_builtins(gateway.health(s)) for s in gateway.sessions.values()]

    async def tools(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [t.as_json() for t in gateway.catalog.tools(body.get("app"))]

    async def llm(body: dict[str, Any]) -> dict[str, Any]:
        names = body.get("tools")
        chosen = [t for t in gateway.catalog.tools() if names is None or t.name in names]
        described, name_map = llm_tools(chosen)
        return {"tools": described, "names": name_map.to_tool}

    async def read_resource(body: dict[str, Any]) -> dict[str, Any]:
        app, uri = body.get("app"), body.get("uri")
        if not isinstance(app, str) or not isinstance(uri, str):
            raise AdminRequestError("invalid_request", "give `app` (app id) and `uri`")
        session = next((s for s in gateway.sessions.values() if s.app.app_id == app), None)
        if session is None:
            raise AdminRequestError("unknown_app", f"no app {app!r}")
        try:
            result = await session.read_resource(uri, session.app.mcp.call_timeout_seconds)
        except (SessionUnavailable, CallTimedOut) as exc:
            raise AdminRequestError("unavailable", str(exc)) from exc
        contents = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.contents]
        await gateway.record_resource_read(session, uri, contents)
        return {"contents": contents}

    return {"apps": apps, "tools": tools, "llm_tools": llm, "read_resource": read_resource}
