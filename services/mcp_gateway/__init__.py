"""The MCP gateway: one MCP session per app, the tool catalog, and `amp.tool.call`."""
