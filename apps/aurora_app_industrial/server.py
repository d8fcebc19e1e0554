"""The `aurora-app-industrial` MCP server: the industrial system's tools, its alarm events and
the two faults a demo needs. The writes' parameters have titles in the plant's language (Chinese):
an approval question names the arguments by them.

Reads (`find_device`, `get_device`, `list_points`, `list_alarms`, `list_rules`, `draft_rule`,
`get_rule`) change nothing; `save_rule` (idempotent by its key) and `enable_rule` are writes.
Alarms go out as `aurora/event` `alarm.raised` notifications every `alarm_interval_seconds`
(startup; 0: never) and on demand (`raise_alarm`). `drop_next_save_response` makes the next
save happen but its response never come (the lost-response case); `fail_next_enable` makes the
next enable fail (the partial case).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ParamSpec, TypeVar

import anyio
import anyio.abc
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.session import ServerSession
from mcp_types import ToolAnnotations
from pydantic import Field

from apps.common import event_params, send_event

from . import plant
from .plant import PlantError, Rules

SERVER_NAME = "aurora-app-industrial"
P = ParamSpec("P")
T = TypeVar("T")
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
IDEMPOTENT_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                   open_world_hint=False)
# Demo controls: they change how the system behaves next, no business data.
CONTROL = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# Every string argument has a length, as the ids and short texts they are: a longer value is refused
# before it reaches the plant, and a model whose server holds its calls to the schema (llama.cpp's
# grammars) ends the string there: a small model otherwise writes on inside one ("9281573046&#34;,
# the ruleId=…") until its context is full, minutes on a CPU.
Id = Annotated[str, Field(max_length=64)]
Text = Annotated[str, Field(max_length=200)]


class IndustrialApp:
    def __init__(self, startup: dict[str, Any], task_group: anyio.abc.TaskGroup | None = None) -> None:
        self.alarm_interval = float(startup.get("alarm_interval_seconds", 0) or 0)
        self.task_group = task_group
        self.rules = Rules()
        self.drop_next_save = False
        self.fail_next_enable = False
        self.session: ServerSession | None = None
        self._sequence = 0
        self.server: MCPServer = MCPServer(
            SERVER_NAME, version="0.1.0",
            instructions="An industrial data system: devices, points with units, alarms and device rules.",
            log_level=str(startup.get("log_level", "INFO")).upper(),  # type: ignore[arg-type]
            middleware=[self._on_initialized],
        )
        self._register_tools()

    async def _on_initialized(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Once the client is initialized, keep its session: the schedule's alarms go out on it."""
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            self._start_schedule(ctx.session)
        return result

    async def emit_alarm(self, session: ServerSession, device_id: str, summary: str | None = None) -> dict[str, Any]:
        """`alarm.raised` for the device's newest alarm (the event names the device and alarm ids)."""
        newest = plant.alarms(device_id, limit=1)
        if not newest:
            raise PlantError(f"device {device_id} has no alarm to raise")
        self._sequence += 1
        alarm = {**newest[0], "sequence": self._sequence}
        params = event_params("alarm.raised", alarm, summary=summary or f"{alarm['level']} alarm on {device_id}: "
                              f"{alarm['message']}")
        params["payload"].update(subject={"kind": "alarm", "id": alarm["alarm_id"]},
                                 source_event_type="alarm.raise")
        await send_event(session, params)
        return alarm

    async def _periodic_alarms(self, session: ServerSession) -> None:
        """The system's own schedule: one device after the other, for as long as the connection lives."""
        devices = sorted(plant.DEVICES)
        n = 0
        while True:
            await anyio.sleep(self.alarm_interval)
            await self.emit_alarm(session, devices[n % len(devices)])
            n += 1

    def _start_schedule(self, session: ServerSession) -> None:
        if self.session is None:
            self.session = session
            if self.alarm_interval > 0 and self.task_group is not None:
                self.task_group.start_soon(self._periodic_alarms, session)

    def _register_tools(self) -> None:
        mcp = self.server

        def checked(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return call(*args, **kwargs)
            except PlantError as exc:
                raise ToolError(str(exc)) from exc

        @mcp.tool(annotations=READ)
        def find_device(text: Text) -> dict[str, Any]:
            """The device a free text names (by id such as `P-101`, or by name): device_id, name, type, site."""
            return checked(plant.find_device, text)

        @mcp.tool(annotations=READ)
        def get_device(device_id: Id) -> dict[str, Any]:
            """Device `device_id`: name, type, site and line."""
            return checked(plant.device, device_id)

        @mcp.tool(annotations=READ)
        def list_points(device_id: Id) -> dict[str, Any]:
            """The device's measuring points: point_id, name, unit and current value."""
            items = checked(plant.points, device_id)
            return {"device_id": device_id, "items": items, "count": len(items)}

        @mcp.tool(annotations=READ)
        def list_alarms(device_id: Id, limit: int = 5) -> dict[str, Any]:
            """The device's recent alarms, newest first (`latest` is the newest or null)."""
            items = checked(plant.alarms, device_id, limit)
            return {"device_id": device_id, "items": items, "count": len(items), "latest": items[0] if items else None}

        @mcp.tool(annotations=READ)
        def list_rules(device_id: Id) -> dict[str, Any]:
            """The device's saved rules (enabled or not)."""
            items = checked(self.rules.of_device, device_id)
            return {"device_id": device_id, "items": items, "count": len(items)}

        @mcp.tool(annotations=READ)
        def draft_rule(device_id: Id, description: Text) -> dict[str, Any]:
            """A rule draft from a description like `温度超过 85 告警`: point, unit, operator, threshold and
            the idempotency key to save it under. Stores nothing."""
            return checked(plant.draft_rule, device_id, description)

        @mcp.tool(annotations=IDEMPOTENT_WRITE)
        async def save_rule(device_id: Annotated[str, Field(title="设备", max_length=64)],
                            point_id: Annotated[str, Field(title="点位", max_length=64)],
                            operator: Annotated[str, Field(title="比较", max_length=8)],
                            threshold: Annotated[float, Field(title="阈值")],
                            name: Annotated[str, Field(title="规则", max_length=200)],
                            idempotency_key: Annotated[str, Field(title="幂等键", max_length=200)]) -> dict[str, Any]:
            """Save a rule, disabled. The same `idempotency_key` again answers the rule saved first
            (`created: false`): never a second rule."""
            saved = checked(self.rules.save, device_id=device_id, point_id=point_id, operator=operator,
                            threshold=threshold, name=name, idempotency_key=idempotency_key)
            if self.drop_next_save:
                self.drop_next_save = False
                await anyio.sleep_forever()  # saved, but the answer is lost on the way back
            return saved

        @mcp.tool(annotations=READ)
        def get_rule(rule_id: Id | None = None,
                     idempotency_key: Annotated[str, Field(max_length=200)] | None = None) -> dict[str, Any]:
            """Read a rule back by `rule_id` or by the `idempotency_key` it was saved under: {found, rule}."""
            return checked(self.rules.get, rule_id, idempotency_key)

        @mcp.tool(annotations=IDEMPOTENT_WRITE)
        def enable_rule(rule_id: Annotated[str, Field(title="规则编号", max_length=64)]) -> dict[str, Any]:
            """Enable a saved rule so that it raises alarms."""
            if self.fail_next_enable:
                self.fail_next_enable = False
                raise ToolError(f"the controller refused to enable {rule_id}: rule engine busy (try again later)")
            return checked(self.rules.enable, rule_id)

        @mcp.tool(annotations=CONTROL)
        async def raise_alarm(ctx: Context, device_id: Id) -> dict[str, Any]:
            """Demo control: emit the device's newest alarm now as an `alarm.raised` event."""
            self._start_schedule(ctx.session)
            try:
                return await self.emit_alarm(ctx.session, device_id)
            except PlantError as exc:
                raise ToolError(str(exc)) from exc

        @mcp.tool(annotations=CONTROL)
        def drop_next_save_response() -> dict[str, Any]:
            """Demo control: the next save_rule saves, but its response never comes back."""
            self.drop_next_save = True
            return {"drop_next_save_response": True}

        @mcp.tool(annotations=CONTROL)
        def fail_next_enable() -> dict[str, Any]:
            """Demo control: the next enable_rule fails."""
            self.fail_next_enable = True
            return {"fail_next_enable": True}
