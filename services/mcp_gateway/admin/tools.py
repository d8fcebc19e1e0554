"""`tools.*`: read pool tools, move them through their lifecycle, mark capability and winner."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.admin.fields import Endpoints, text_field
from services.mcp_gateway.pool.lifecycle import LifecycleError, transition
from services.mcp_gateway.pool.registry import PoolError, ToolPool
from shared.admin import AdminHandler, AdminRequestError
from shared.clock import now_iso
from shared.contracts.tooldef import ToolDefinition
from shared.people import current_caller


def tool_endpoints(pool: ToolPool) -> Endpoints:
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
                text_field(body, "name"),
                current_caller().label(body.get("by")),  # a person: who the server authenticated
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
        name = text_field(body, "name")
        update: dict[str, Any] = {
            "changed_by": current_caller().label(body.get("by")),
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
