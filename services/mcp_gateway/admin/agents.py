"""`agents.*`: apply/get/delete agents, and an agent's available tools for one run."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.admin.fields import Endpoints, text_field
from services.mcp_gateway.admin.skills import missing_skills
from services.mcp_gateway.calls.platform_tools import PLATFORM_TOOLS, source_app_of
from services.mcp_gateway.calls.platform_tools import check as check_platform
from services.mcp_gateway.pool.availability import available_tools, unresolved_duplicates
from services.mcp_gateway.pool.executable import Executability
from services.mcp_gateway.pool.registry import ToolPool
from services.mcp_gateway.pool.schema_adapter import build_name_map, llm_function
from shared.config.appconfig import AppsConfig
from shared.nats.admin_service import AdminRequestError
from shared.resource_admin import ResourceAdmin
from shared.resources import kind_named


def agent_endpoints(pool: ToolPool, executable: Executability, apps: AppsConfig) -> Endpoints:
    # Agents are the tool pool's (their bindings are governance's business): the gateway
    # serves `aurora apply/get/delete` for them, as it does for systems.
    resources = ResourceAdmin(kind_named("agents"), pool.bucket("agents"))

    async def agent_tools(body: dict[str, Any]) -> dict[str, Any]:
        """The agent's tools for one run: bound pool tools that can run now, plus the platform
        tools this event and this agent allow (`delivery` is the run's delivery context)."""
        agent_id = text_field(body, "agent")
        agent = await pool.agent(agent_id)  # read through: one applied a moment ago is not unknown
        if agent is None:
            raise AdminRequestError("unknown_agent", f"no agent {agent_id!r}")
        delivery = body.get("delivery") if isinstance(body.get("delivery"), dict) else None
        availability = available_tools(agent.tools, pool.tools, executable)
        names = build_name_map(t.name for t in availability.available)
        tools = [
            llm_function(names.to_llm[t.name], t.description or t.name, t.input_schema) for t in availability.available
        ]
        available = [
            {"name": t.name, "side_effect": t.side_effect, "llm_name": names.to_llm[t.name]}
            for t in availability.available
        ]
        excluded = [{"tool": e.tool, "reason": e.reason, "detail": e.detail} for e in availability.excluded]
        app_id = source_app_of(delivery)
        app = apps.get(app_id) if app_id else None
        for spec in PLATFORM_TOOLS.values():
            refusal = check_platform(
                spec, delivery=delivery, app=app, allowed_platform_tools=agent.allowed_platform_tools
            )
            if refusal is not None:
                excluded.append({"tool": spec.name, "reason": refusal.reason, "detail": refusal.detail})
                continue
            tools.append(llm_function(spec.name, spec.description, spec.parameters))
            available.append({"name": spec.name, "side_effect": spec.side_effect, "llm_name": spec.name})
            names.to_tool[spec.name] = spec.name
        return {
            "agent": agent_id,
            "enabled": agent.enabled,
            "tools": tools,
            "available": available,
            "names": names.to_tool,
            "excluded": excluded,
        }

    async def apply_agent(body: dict[str, Any]) -> dict[str, Any]:
        """Governance first: one capability bound twice needs a reviewer's pick of the winner."""
        document = body.get("document")
        bound = document.get("tools") if isinstance(document, dict) else None
        if isinstance(bound, list):
            problems = unresolved_duplicates(pool.tools[n] for n in bound if isinstance(n, str) and n in pool.tools)
            if problems:
                raise AdminRequestError("duplicate_capability", "; ".join(problems))
        skills = document.get("skills") if isinstance(document, dict) else None
        missing = await missing_skills(pool, skills) if isinstance(skills, list) else []
        if missing and isinstance(document, dict):
            raise AdminRequestError("unknown_skill", f"agent {document.get('id')!r} names skill(s) that do not exist: "
                                    f"{', '.join(map(repr, missing))}; apply each `kind: Skill` first (in the "
                                    "same file, before the agent)")
        return await resources.apply(body)

    return {("agents", "tools"): agent_tools, ("agents", "apply"): apply_agent,
            ("agents", "get"): resources.get, ("agents", "delete"): resources.delete}
