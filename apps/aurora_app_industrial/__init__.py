"""The industrial demo system: devices, points, alarms and device rules over MCP (stdio)."""
