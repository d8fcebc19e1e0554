"""The gateway's admin endpoints, `<p>.admin.<area>.<verb>`, all JSON in and out, one module per area.

gateway: apps, tools (the live MCP catalog), llm_tools, read_resource
systems: apply, get, delete, enable, disable, import_openapi, import_a2a, status
tools:   get, review, publish, deprecate, draft, mark, suggest, edit
agents:  tools (an agent's available set, LLM-ready, and why each bound tool is left out), apply, get, delete
skills:  apply (versioned), get, delete
approvals: list, get, grant, deny (the decider is the person the server authenticated)
users:   add, disable, list, get; policies: apply, get, delete (ApprovalPolicy)
"""

from __future__ import annotations

from collections.abc import Mapping

from nats.js.kv import KeyValue

from services.mcp_gateway.admin.agents import agent_endpoints
from services.mcp_gateway.admin.app_sessions import gateway_endpoints
from services.mcp_gateway.admin.approvals import approval_endpoints
from services.mcp_gateway.admin.fields import Endpoints
from services.mcp_gateway.admin.skills import skill_endpoints
from services.mcp_gateway.admin.systems import system_endpoints
from services.mcp_gateway.admin.tools import tool_endpoints
from services.mcp_gateway.admin.users import user_endpoints
from services.mcp_gateway.approvals.deciders import Governance
from services.mcp_gateway.approvals.store import ApprovalStore
from services.mcp_gateway.pool.executable import Executability
from services.mcp_gateway.pool.live_catalog import ToolCatalog
from services.mcp_gateway.pool.registry import ToolPool
from services.mcp_gateway.reporting.platform_events import PlatformEvents
from services.mcp_gateway.reporting.reports import Reporting
from services.mcp_gateway.sessions.session import AppSession
from services.mcp_gateway.sessions.status import StatusViews
from services.mcp_gateway.systems.limits import OpenApiLimits
from services.mcp_gateway.systems.openapi_job import OpenApiImporter
from services.mcp_gateway.systems.secrets import DeclaredSecrets
from shared.config.appconfig import AppsConfig

__all__ = ["Endpoints", "admin_endpoints"]


def admin_endpoints(*, sessions: Mapping[tuple[str, str], AppSession], catalog: ToolCatalog, status: StatusViews,
                    events: PlatformEvents, reporting: Reporting, apps: AppsConfig, pool: ToolPool,
                    approvals: ApprovalStore, executable: Executability, governance: Governance,
                    users: KeyValue, policies: KeyValue, importer: OpenApiImporter | None = None,
                    secrets: DeclaredSecrets | None = None) -> Endpoints:
    endpoints: Endpoints = {}
    endpoints.update(gateway_endpoints(sessions, catalog, status, reporting))
    endpoints.update(system_endpoints(pool, events, status, importer or OpenApiImporter(OpenApiLimits.from_env({})),
                                      secrets or DeclaredSecrets()))
    endpoints.update(tool_endpoints(pool))
    endpoints.update(agent_endpoints(pool, executable, apps))
    endpoints.update(skill_endpoints(pool))
    endpoints.update(approval_endpoints(approvals, events, governance, reporting))
    endpoints.update(user_endpoints(users, policies))
    return endpoints
