"""`tools.*`: read pool tools, move them through their lifecycle, mark capability and winner, keep
a model's suggestion for a draft (stored beside the definition, not applied), and apply a
reviewer's wording to a draft (`tools.edit`, the logic in pool/wording.py)."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.admin.fields import Endpoints, text_field
from services.mcp_gateway.pool.lifecycle import LifecycleError, transition
from services.mcp_gateway.pool.registry import PoolError, ToolPool
from services.mcp_gateway.pool.wording import PARTS, EditError, EditRequest, edit_tool
from shared.clock import now_iso
from shared.contracts.resource import ResourceError, parse_resource
from shared.contracts.suggestion import ToolSuggestion
from shared.contracts.tooldef import ReviewNote, ToolDefinition
from shared.nats.admin_service import AdminHandler, AdminRequestError
from shared.people import current_caller

SUGGESTABLE = ("DRAFT", "REVIEWING")


def with_suggestion(tool: ToolDefinition, suggestion: ToolSuggestion, *, by: str, now: str) -> ToolDefinition:
    """The tool with the suggestion beside it and a note saying so; its own fields, version and
    state unchanged. AdminRequestError when the tool is not under review or the suggestion
    names parameters the tool does not have."""
    if tool.state not in SUGGESTABLE:
        raise AdminRequestError("not_a_draft", f"{tool.name} is {tool.state}: suggestions are for tools in "
                                f"{' or '.join(SUGGESTABLE)} (aurora tools draft {tool.name} first)")
    known = set((tool.input_schema.get("properties") or {}).keys())
    unknown = sorted((set(suggestion.parameters) | set(suggestion.units)) - known)
    if unknown:
        raise AdminRequestError("invalid_request", f"the suggestion names parameters {tool.name} does not have: "
                                f"{', '.join(unknown)}")
    kept = suggestion.model_copy(update={"at": now, "by": by, "for_version": tool.version})
    note = ReviewNote(at=now, by=by, action="suggested", note=f"wording suggested by model {suggestion.model}; "
                      "not applied")
    return tool.model_copy(update={"suggestion": kept, "notes": (*tool.notes, note)})


def edit_request(body: dict[str, Any]) -> EditRequest:
    """The reviewer's request from a `tools.edit` body; AdminRequestError naming a malformed field."""
    def texts(key: str) -> dict[str, str]:
        value = body.get(key) or {}
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise AdminRequestError("invalid_request", f"field {key!r} must map parameter names to text")
        return value
    description, only, note = body.get("description"), body.get("only") or list(PARTS), body.get("note") or ""
    if description is not None and not isinstance(description, str):
        raise AdminRequestError("invalid_request", "field 'description' must be text")
    if not isinstance(only, list) or not all(isinstance(part, str) for part in only):
        raise AdminRequestError("invalid_request", f"field 'only' must list some of {', '.join(PARTS)}")
    if not isinstance(note, str):
        raise AdminRequestError("invalid_request", "field 'note' must be text")
    request = EditRequest(description=description, parameters=texts("parameters"), units=texts("units"),
                          from_suggestion=body.get("from_suggestion") is True, only=tuple(only), note=note)
    if request.description is None and not (request.parameters or request.units or request.from_suggestion):
        raise AdminRequestError("invalid_request", "nothing to edit: give a description, parameters, units or "
                                "from_suggestion")
    return request


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
        """A reviewer names the business capability, among duplicates the winner, and (before
        publishing) the side effect: an imported A2A skill is a write until marked otherwise."""
        name = text_field(body, "name")
        update: dict[str, Any] = {
            "changed_by": current_caller().label(body.get("by")),
            "changed_at": now_iso(),
        }
        if "capability" in body:
            update["capability"] = body["capability"] or None
        if "preferred" in body:
            update["preferred"] = bool(body["preferred"])
        if "side_effect" in body:  # what the tool does, said by the reviewer before it is published
            if body["side_effect"] not in ("read", "write", "dangerous"):
                raise AdminRequestError("invalid_request", "field 'side_effect': read, write or dangerous")
            update["side_effect"] = body["side_effect"]

        def marked(tool: ToolDefinition) -> ToolDefinition:
            if "side_effect" in update and tool.state not in ("DRAFT", "REVIEWING"):
                raise PoolError("invalid_state", f"{tool.name} is {tool.state}: its side effect is marked before "
                                "it is published (`aurora tools draft` first)")
            return tool.model_copy(update=update)

        try:
            tool = await pool.update_tool(name, marked)
        except PoolError as exc:
            raise AdminRequestError(exc.code, str(exc)) from exc
        return tool.model_dump(mode="json")

    async def suggest(body: dict[str, Any]) -> dict[str, Any]:
        """Keep a model's suggestion for a draft; nothing of the definition itself changes."""
        name, by = text_field(body, "name"), current_caller().label(body.get("by"))
        raw = body.get("suggestion")
        if not isinstance(raw, dict):
            raise AdminRequestError("invalid_request", 'send {"name", "suggestion": {"model", "description", ...}}')
        try:
            suggestion = parse_resource(ToolSuggestion, raw)
        except ResourceError as exc:
            raise AdminRequestError("invalid_request", f"suggestion rejected: {exc}") from exc
        try:
            tool = await pool.update_tool(name, lambda t: with_suggestion(t, suggestion, by=by, now=now_iso()))
        except PoolError as exc:
            raise AdminRequestError(exc.code, str(exc)) from exc
        return tool.model_dump(mode="json")

    async def edit(body: dict[str, Any]) -> dict[str, Any]:
        """A reviewer's wording into a draft: {"before", "tool"} (the definition before and after)."""
        name, by, request = text_field(body, "name"), current_caller().label(body.get("by")), edit_request(body)
        seen: list[ToolDefinition] = []

        def change(tool: ToolDefinition) -> ToolDefinition:
            seen.append(tool)  # the last one is what the edit was made to (update_tool may retry)
            return edit_tool(tool, request, by=by, now=now_iso())

        try:
            tool = await pool.update_tool(name, change)
        except EditError as exc:
            raise AdminRequestError(exc.code, str(exc)) from exc
        except PoolError as exc:
            raise AdminRequestError(exc.code, str(exc)) from exc
        return {"before": seen[-1].model_dump(mode="json"), "tool": tool.model_dump(mode="json")}

    endpoints: Endpoints = {("tools", "get"): get, ("tools", "mark"): mark, ("tools", "suggest"): suggest,
                            ("tools", "edit"): edit}
    for action in ("review", "publish", "deprecate", "draft"):
        endpoints[("tools", action)] = lifecycle(action)
    return endpoints
