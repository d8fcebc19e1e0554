"""Aurora example app: a stdio MCP weather server that emits `aurora/event` notifications."""

from .server import SERVER_NAME, WeatherApp

__all__ = ["SERVER_NAME", "WeatherApp"]
