"""mcp-edge: each agent as a Streamable HTTP MCP server (`/agents/<id>/mcp`), behind bearer tokens."""
