"""The gateway's admin endpoints, `<p>.admin.<area>.<verb>`, all JSON in and out.

gateway: apps, tools (the live MCP catalog), llm_tools, read_resource
systems: apply, get, delete, enable, disable, import_openapi, status
tools:   get, review, publish, deprecate, draft, mark
agents:  tools (an agent's available set, LLM-ready, and why each bound tool is left out)
approvals: list, get, grant, deny
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.mcp_gateway.gateway import Gateway
from services.mcp_gateway.http import OpenApiError, plan_merge
from services.mcp_gateway.http.limits import OpenApiLimits
from services.mcp_gateway.http.openapi_job import OpenApiImporter
from services.mcp_gateway.platform_tools import PLATFORM_TOOLS, source_app_of
from services.mcp_gateway.platform_tools import check as check_platform
from services.mcp_gateway.pool.approvals import ApprovalRefused, ApprovalStore
from services.mcp_gateway.pool.availability import available_tools, unresolved_duplicates
from services.mcp_gateway.pool.executable import Executability
from services.mcp_gateway.pool.lifecycle import LifecycleError, transition
from services.mcp_gateway.pool.registry import PoolError, ToolPool
from services.mcp_gateway.schema_adapter import build_name_map, llm_function, llm_tools
from services.mcp_gateway.session import CallTimedOut, SessionUnavailable
from shared.admin import AdminHandler, AdminRequestError
from shared.clock import now_iso
from shared.contracts.approval import Approval
from shared.contracts.system import OpenApiSource, System
from shared.contracts.tooldef import ToolDefinition
from shared.resource_admin import ResourceAdmin
from shared.resources import kind_named

Endpoints = dict[tuple[str, str], AdminHandler]


def _text(body: dict[str, Any], field: str, *, required: bool = True) -> str:
    value = body.get(field)
    if isinstance(value, str) and value:
        return value
    if required:
        raise AdminRequestError("invalid_request", f"field {field!r} is required (a non-empty string)")
    return ""


def admin_endpoints(gateway: Gateway, pool: ToolPool, approvals: ApprovalStore, executable: Executability,
                    *, importer: OpenApiImporter | None = None) -> Endpoints:
    endpoints: Endpoints = {}
    endpoints.update(_gateway_endpoints(gateway))
    endpoints.update(_system_endpoints(gateway, pool, importer or OpenApiImporter(OpenApiLimits.from_env({}))))
    endpoints.update(_tool_endpoints(pool))
    endpoints.update(_agent_endpoints(gateway, pool, executable))
    endpoints.update(_approval_endpoints(gateway, approvals))
    return endpoints


def _gateway_endpoints(gateway: Gateway) -> Endpoints:
    async def apps(_: dict[str, Any]) -> list[dict[str, Any]]:
        return [msgspec.to_builtins(gateway.health(s)) for s in gateway.sessions.values()]

    async def tools(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [t.as_json() for t in gateway.catalog.tools(body.get("app"))]

    async def read_resource(body: dict[str, Any]) -> dict[str, Any]:
        app, uri = _text(body, "app"), _text(body, "uri")
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

    async def llm(body: dict[str, Any]) -> dict[str, Any]:
        names = body.get("tools")
        chosen = [t for t in gateway.catalog.tools() if names is None or t.name in names]
        described, name_map = llm_tools(chosen)
        return {"tools": described, "names": name_map.to_tool}

    return {
        ("gateway", "apps"): apps,
        ("gateway", "tools"): tools,
        ("gateway", "llm_tools"): llm,
        ("gateway", "read_resource"): read_resource,
    }


def _system_endpoints(gateway: Gateway, pool: ToolPool, importer: OpenApiImporter) -> Endpoints:
    resources = ResourceAdmin(kind_named("systems"), pool.bucket("systems"))

    async def set_enabled(body: dict[str, Any], enabled: bool) -> dict[str, Any]:
        name = _text(body, "name")
        try:
            system = await pool.update_system(name, lambda s: s.model_copy(update={"enabled": enabled}))
        except PoolError as exc:
            raise AdminRequestError(exc.code, str(exc)) from exc
        gateway.platform_event(
            f"system.{'enabled' if enabled else 'disabled'}",
            f"system {name} {'enabled' if enabled else 'disabled'}",
            {"system": name},
            subject=("system", name),
        )
        return system.model_dump(mode="json")

    async def enable(body: dict[str, Any]) -> dict[str, Any]:
        return await set_enabled(body, True)

    async def disable(body: dict[str, Any]) -> dict[str, Any]:
        return await set_enabled(body, False)

    async def import_openapi(body: dict[str, Any]) -> dict[str, Any]:
        """Register (or update) an HTTP system from an OpenAPI document; its operations become
        drafts. Importing again updates drafts instead of duplicating them. The document is
        `document` (its text, as the CLI sends a local file; `spec` then names it), else read
        from `spec`: an http(s) URL or a file below the gateway's specs folder."""
        name, base_url, spec = _text(body, "name"), _text(body, "base_url"), _text(body, "spec")
        by = _text(body, "by", required=False) or "operator"
        document = body.get("document")
        if document is not None and not isinstance(document, str):
            raise AdminRequestError("invalid_request", "field 'document' must be the document's text (a string)")
        try:
            result = await importer.run(spec, document, system=name, now=now_iso(), by=by,
                                        package=_text(body, "package", required=False) or name)
        except OpenApiError as exc:
            raise AdminRequestError("invalid_openapi", str(exc)) from exc
        existing = pool.systems.get(name)
        if existing is not None and existing.type != "http":
            raise AdminRequestError("conflict", f"system {name!r} is an {existing.type} system")
        system = (existing or System(name=name, base_url=base_url)).model_copy(
            update={"base_url": base_url, "openapi": OpenApiSource(spec=spec, sent=document is not None)}
        )
        await pool.put_system(system)
        outcome: dict[str, Any] = {
            "system": name,
            "title": result.title,
            "created": [],
            "updated": [],
            "unchanged": [],
            "left": [],
            "missing": {},
            "renamed": [r.__dict__ for r in result.renamed],
            "skipped": list(result.skipped),
        }
        for tool in result.tools:
            decision = plan_merge(pool.tools.get(tool.name), tool)
            if decision.tool is not None and decision.action in ("create", "update"):
                await pool.put_tool(decision.tool)
            key = {"create": "created", "update": "updated", "unchanged": "unchanged"}.get(decision.action)
            if key is None:
                outcome["left"].append({"tool": tool.name, "reason": decision.reason})
            else:
                outcome[key].append(tool.name)
            if tool.missing:
                outcome["missing"][tool.name] = list(tool.missing)
        return outcome

    async def status(_: dict[str, Any]) -> list[dict[str, Any]]:
        return [gateway.system_status(system) for system in sorted(pool.systems.values(), key=lambda s: s.name)]

    return {
        ("systems", "apply"): resources.apply,
        ("systems", "get"): resources.get,
        ("systems", "delete"): resources.delete,
        ("systems", "enable"): enable,
        ("systems", "disable"): disable,
        ("systems", "status"): status,
        ("systems", "import_openapi"): import_openapi,
    }


def _tool_endpoints(pool: ToolPool) -> Endpoints:
    async def get(body: dict[str, Any]) -> Any:
        name = body.get("id") or body.get("name")
        if name is None:
            return {"items": [t.model_dump(mode="json") for _, t in sorted(pool.tools.items())]}
        tool = pool.tools.get(str(name))
        if tool is None:
            raise AdminRequestError("not_found", f"no tool {name!r}")
        return tool.model_dump(mode="json")

    def lifecycle(action: str) -> AdminHandler:
        async def move(body: dict[str, Any]) -> dict[str, Any]:
            name, by, note = (
                _text(body, "name"),
                _text(body, "by", required=False) or "operator",
                body.get("note") or "",
            )

            def change(tool: ToolDefinition) -> ToolDefinition:
                return transition(tool, action, system=pool.systems.get(tool.system), by=by, note=note, now=now_iso())

            try:
                tool = await pool.update_tool(name, change)
            except LifecycleError as exc:
                raise AdminRequestError("lifecycle_refused", str(exc)) from exc
            except PoolError as exc:
                raise AdminRequestError(exc.code, str(exc)) from exc
            return tool.model_dump(mode="json")

        return move

    async def mark(body: dict[str, Any]) -> dict[str, Any]:
        """A reviewer names the business capability and, among duplicates, the winner."""
        name = _text(body, "name")
        update: dict[str, Any] = {
            "changed_by": _text(body, "by", required=False) or "operator",
            "changed_at": now_iso(),
        }
        if "capability" in body:
            update["capability"] = body["capability"] or None
        if "preferred" in body:
            update["preferred"] = bool(body["preferred"])
        try:
            tool = await pool.update_tool(name, lambda t: t.model_copy(update=update))
        except PoolError as exc:
            raise AdminRequestError(exc.code, str(exc)) from exc
        return tool.model_dump(mode="json")

    endpoints: Endpoints = {("tools", "get"): get, ("tools", "mark"): mark}
    for action in ("review", "publish", "deprecate", "draft"):
        endpoints[("tools", action)] = lifecycle(action)
    return endpoints


def _agent_endpoints(gateway: Gateway, pool: ToolPool, executable: Executability) -> Endpoints:
    # Agents are the tool pool's (their bindings are governance's business): the gateway
    # serves `aurora apply/get/delete` for them, as it does for systems.
    resources = ResourceAdmin(kind_named("agents"), pool.bucket("agents"))

    async def agent_tools(body: dict[str, Any]) -> dict[str, Any]:
        """The agent's tools for one run: bound pool tools that can run now, plus the platform
        tools this event and this agent allow (`delivery` is the run's delivery context)."""
        agent_id = _text(body, "agent")
        agent = pool.agents.get(agent_id)
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
        app = gateway.app_config(app_id) if app_id else None
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
        return await resources.apply(body)

    return {("agents", "tools"): agent_tools, ("agents", "apply"): apply_agent,
            ("agents", "get"): resources.get, ("agents", "delete"): resources.delete}


def _approval_endpoints(gateway: Gateway, approvals: ApprovalStore) -> Endpoints:
    async def list_approvals(body: dict[str, Any]) -> list[dict[str, Any]]:
        state = body.get("state")
        return [gateway.approval_view(a) for a in await approvals.find(state if isinstance(state, str) else None)]

    async def get(body: dict[str, Any]) -> dict[str, Any]:
        found = await approvals.get(_text(body, "id"))
        if found is None:
            raise AdminRequestError("not_found", f"no approval {body['id']!r}")
        return gateway.approval_view(found[0])

    def decide(grant: bool) -> AdminHandler:
        verb = "granted" if grant else "denied"

        async def handler(body: dict[str, Any]) -> dict[str, Any]:
            approval_id = _text(body, "id")
            try:
                approval = await approvals.decide(
                    approval_id, grant=grant, by=_text(body, "by", required=False) or "operator", note=body.get("note")
                )
            except ApprovalRefused as exc:
                if exc.approval is not None and exc.approval.state == verb:
                    # Decided so before: still refused, but its event goes out again, in case the
                    # gateway died between deciding and publishing (the bridge keeps it once).
                    await publish_decision(exc.approval, verb)
                raise AdminRequestError(exc.code, str(exc)) from exc
            await publish_decision(approval, verb)
            return gateway.approval_view(approval)

        return handler

    async def publish_decision(approval: Approval, verb: str) -> None:
        try:
            await gateway.publish_approval_decision(approval, verb)
        except Exception as exc:
            raise AdminRequestError(
                "event_not_published",
                f"approval {approval.id} is {verb}, but its event could not be published ({exc}); "
                "run the same command again to publish it",
            ) from exc

    return {
        ("approvals", "list"): list_approvals,
        ("approvals", "get"): get,
        ("approvals", "grant"): decide(True),
        ("approvals", "deny"): decide(False),
    }
