"""The app-supervisor (the seed's MCPServerKit): starts, relays, restarts and stops local stdio
MCP servers, and reports their lifecycle to the gateway, the event-bridge and the health KV."""
