"""MCP client transports the gateway owns, so every raw message can be observed."""
