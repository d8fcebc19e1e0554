"""Aurora example app: an in-memory notes MCP server served over Streamable HTTP."""

from .server import SERVER_NAME, NotesApp

__all__ = ["SERVER_NAME", "NotesApp"]
