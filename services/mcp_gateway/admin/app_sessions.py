"""`gateway.*`: the apps' sessions, the live MCP catalog, its LLM-ready form, resource reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from services.mcp_gateway.admin.fields import Endpoints, text_field
from services.mcp_gateway.pool.live_catalog import ToolCatalog
from services.mcp_gateway.pool.schema_adapter import llm_tools
from services.mcp_gateway.reporting.reports import Reporting
from services.mcp_gateway.sessions.errors import CallTimedOut, SessionUnavailable
from services.mcp_gateway.sessions.session import AppSession
from services.mcp_gateway.sessions.status import StatusViews
from shared.nats.admin_service import AdminRequestError


def gateway_endpoints(sessions: Mapping[tuple[str, str], AppSession], catalog: ToolCatalog, status: StatusViews,
                      reporting: Reporting) -> Endpoints:
    async def apps(_: dict[str, Any]) -> list[dict[str, Any]]:
        return [msgspec.to_builtins(health) for health in status.apps()]

    async def tools(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [t.as_json() for t in catalog.tools(body.get("app"))]

    async def read_resource(body: dict[str, Any]) -> dict[str, Any]:
        app, uri = text_field(body, "app"), text_field(body, "uri")
        session = next((s for s in sessions.values() if s.app.app_id == app), None)
        if session is None:
            raise AdminRequestError("unknown_app", f"no app {app!r}")
        try:
            result = await session.read_resource(uri, session.app.mcp.call_timeout_seconds)
        except (SessionUnavailable, CallTimedOut) as exc:
            raise AdminRequestError("unavailable", str(exc)) from exc
        contents = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.contents]
        await reporting.record_resource_read(session, uri, contents)
        return {"contents": contents}

    async def llm(body: dict[str, Any]) -> dict[str, Any]:
        names = body.get("tools")
        chosen = [t for t in catalog.tools() if names is None or t.name in names]
        described, name_map = llm_tools(chosen)
        return {"tools": described, "names": name_map.to_tool}

    return {
        ("gateway", "apps"): apps,
        ("gateway", "tools"): tools,
        ("gateway", "llm_tools"): llm,
        ("gateway", "read_resource"): read_resource,
    }
