"""apps/config.yml documents for tests: the entries of the test apps, written where a stack reads them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
APPS = REPO / "tests" / "apps"
ECHO = "test.echo"
# Restarts within a test's patience; a crash loop still gives up (max_restarts) within a minute.
FAST_RESTART = {"backoff_initial_seconds": 0.1, "backoff_max_seconds": 0.5, "max_restarts": 20,
                "window_seconds": 60}


def stdio(command: list[str], *, package: str, **extra: Any) -> dict[str, Any]:
    """An entry for a stdio app the supervisor runs from the repository's root."""
    mcp = {"transport": "stdio", "command": command, "cwd": str(REPO), **extra.pop("mcp", {})}
    return {"package": package, "mcp": mcp, "restart": extra.pop("restart", FAST_RESTART), **extra}


def echo_app(package: str = ECHO, **extra: Any) -> dict[str, Any]:
    """The echo app (tests/apps/echo_app.py): reads, a slow read, a counter, a failing tool."""
    return stdio([PYTHON, str(APPS / "echo_app.py")], package=package, **extra)


def write_apps(folder: Path, apps: dict[str, dict[str, Any]], name: str = "apps.yml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({"apps": apps}, allow_unicode=True), encoding="utf-8")
    return path
