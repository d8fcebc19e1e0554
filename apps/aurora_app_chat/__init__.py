"""Aurora example app: a simulated IM (QQ-like) over stdio MCP, with platform tools and native events."""

from .server import SERVER_NAME, ChatApp

__all__ = ["SERVER_NAME", "ChatApp"]
