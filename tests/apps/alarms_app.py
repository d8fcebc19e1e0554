"""Test MCP app over stdio: an industrial alarm system (read-only) for the cross-system relay.

`get_alarm(alarm_id)` answers the alarm with its device (id and name); unknown ids are an error.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)

ALARMS: dict[str, dict[str, Any]] = {
    "ALM-1001": {"alarm_id": "ALM-1001", "level": "critical", "message": "bearing temperature 96.5 °C over limit 85",
                 "raised_at": "2026-06-19T08:12:00+08:00", "point": "TT-204", "value": 96.5, "unit": "°C",
                 "device": {"id": "DEV-77", "name": "Pump P-101"}},
    "ALM-1002": {"alarm_id": "ALM-1002", "level": "warning", "message": "vibration 7.1 mm/s over limit 6",
                 "raised_at": "2026-06-19T09:40:00+08:00", "point": "VT-311", "value": 7.1, "unit": "mm/s",
                 "device": {"id": "DEV-90", "name": "Fan F-9"}},
}

server = MCPServer("aurora-test-alarms", version="0.1.0", instructions="Industrial alarms (test data).")


@server.tool(annotations=READ)
def get_alarm(alarm_id: str) -> dict[str, Any]:
    """The alarm `alarm_id` with its device (`device.id`, `device.name`), level, point and value."""
    alarm = ALARMS.get(alarm_id)
    if alarm is None:
        raise ToolError(f"no alarm {alarm_id!r}")
    return alarm


if __name__ == "__main__":
    anyio.run(server.run_stdio_async)
