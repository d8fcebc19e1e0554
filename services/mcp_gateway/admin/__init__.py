"""The gateway's admin endpoints, `<p>.admin.<area>.<verb>`, all JSON in and out, one module per area.

gateway: apps, tools (the live MCP catalog), llm_tools, read_resource
systems: apply, get, delete, enable, disable, import_openapi, status
tools:   get, review, publish, deprecate, draft, mark
agents:  tools (an agent's available set, LLM-ready, and why each bound tool is left out), apply, get, delete
approvals: list, get, grant, deny
"""

from __future__ import annotations

from services.mcp_gateway.admin.agents import agent_endpoints
from services.mcp_gateway.admin.approvals import approval_endpoints
from services.mcp_gateway.admin.fields import Endpoints
from services.mcp_gateway.admin.gateway import gateway_endpoints
from services.mcp_gateway.admin.systems import system_endpoints
from services.mcp_gateway.admin.tools import tool_endpoints
from services.mcp_gateway.gateway import Gateway
from services.mcp_gateway.http.limits import OpenApiLimits
from services.mcp_gateway.http.openapi_job import OpenApiImporter
from services.mcp_gateway.pool.approvals import ApprovalStore
from services.mcp_gateway.pool.executable import Executability
from services.mcp_gateway.pool.registry import ToolPool

__all__ = ["Endpoints", "admin_endpoints"]


def admin_endpoints(gateway: Gateway, pool: ToolPool, approvals: ApprovalStore, executable: Executability,
                    *, importer: OpenApiImporter | None = None) -> Endpoints:
    endpoints: Endpoints = {}
    endpoints.update(gateway_endpoints(gateway))
    endpoints.update(system_endpoints(gateway, pool, importer or OpenApiImporter(OpenApiLimits.from_env({}))))
    endpoints.update(tool_endpoints(pool))
    endpoints.update(agent_endpoints(gateway, pool, executable))
    endpoints.update(approval_endpoints(gateway, approvals))
    return endpoints
