"""An MCP app's tool as a pool definition: what discovery registers, and what the app changing a
tool's contract does to the definition it had."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.pool.live_catalog import CatalogTool
from shared.config.appconfig import AppConfig
from shared.contracts.tooldef import McpExecution, ReviewNote, ToolDefinition

GATEWAY = "mcp-gateway"


def mcp_definition(app: AppConfig, tool: CatalogTool, now: str) -> ToolDefinition:
    return ToolDefinition(
        name=tool.name,
        system=app.app_id,
        description=tool.description,
        input_schema=dict(tool.input_schema) or {"type": "object", "properties": {}},
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        execution=McpExecution(app=app.app_id, instance=app.instance, tool=tool.tool),
        side_effect=tool.side_effect,
        state="PUBLISHED" if app.governance == "auto" else "DRAFT",
        source="mcp",
        changed_by=GATEWAY,
        changed_at=now,
        notes=(
            ReviewNote(
                at=now,
                by=GATEWAY,
                action="discovered",
                note=f"discovered from app {app.name} ({app.governance} governance)",
            ),
        ),
    )


def contract(tool: ToolDefinition) -> tuple[Any, ...]:
    """What the app decides about a tool; a change of it is the app's change (a new version)."""
    return (tool.description, tool.input_schema, tool.output_schema, tool.side_effect, tool.execution)


def changed_by_app(old: ToolDefinition, new: ToolDefinition, app: AppConfig, now: str) -> ToolDefinition:
    """The app changed a tool's contract: take the new contract, bump the version; under
    review governance a published tool goes back to DRAFT until a reviewer looks again."""
    state = old.state
    if app.governance == "review" and state in ("PUBLISHED", "REVIEWING"):
        state = "DRAFT"
    return old.model_copy(
        update={
            "description": new.description,
            "input_schema": new.input_schema,
            "output_schema": new.output_schema,
            "side_effect": new.side_effect,
            "execution": new.execution,
            "state": state,
            "version": old.version + 1,
            "changed_by": GATEWAY,
            "changed_at": now,
            "notes": (
                *old.notes,
                ReviewNote(at=now, by=GATEWAY, action="changed", note="the app changed the contract"
                           + ("; the reviewer's wording kept" if old.edited else "")),
            ),
        }
    )
