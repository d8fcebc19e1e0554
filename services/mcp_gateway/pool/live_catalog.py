"""The tool catalog: every app's MCP tools under `<package>.<tool>`, nothing silently overwritten."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.contracts.toolcall import SideEffect
from shared.errors import AuroraError


class CatalogConflict(AuroraError):
    """Two apps expose the same prefixed tool name."""


@dataclass(frozen=True)
class CatalogTool:
    name: str
    app_id: str
    instance: str
    app_name: str
    tool: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    side_effect: SideEffect = "write"

    @property
    def app_key(self) -> tuple[str, str]:
        return (self.app_id, self.instance)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "app": self.app_id,
            "instance": self.instance,
            "app_name": self.app_name,
            "tool": self.tool,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "output_schema": dict(self.output_schema) if self.output_schema else None,
            "annotations": dict(self.annotations),
            "side_effect": self.side_effect,
        }


def side_effect_of_annotations(annotations: Mapping[str, Any] | None) -> SideEffect:
    """From MCP annotations: read-only → read; destructive → dangerous; anything else, including
    no annotations at all, is a write (unknown means write)."""
    hints = annotations or {}
    if hints.get("readOnlyHint") is True:
        return "read"
    if hints.get("destructiveHint") is True:
        return "dangerous"
    return "write"


def prefixed_name(package: str, tool: str) -> str:
    return f"{package}.{tool}"


class ToolCatalog:
    """Prefixed name → tool. One owner per name; a second claimant is refused, never swapped in."""

    def __init__(self) -> None:
        self._tools: dict[str, CatalogTool] = {}

    def get(self, name: str) -> CatalogTool | None:
        return self._tools.get(name)

    def tools(self, app_id: str | None = None) -> list[CatalogTool]:
        tools = (t for t in self._tools.values() if app_id is None or t.app_id == app_id)
        return sorted(tools, key=lambda t: t.name)

    def count(self, app_key: tuple[str, str]) -> int:
        return sum(1 for t in self._tools.values() if t.app_key == app_key)

    def replace_app(self, app_key: tuple[str, str], tools: Iterable[CatalogTool]) -> list[str]:
        """Set one app's tools; returns a reason for every tool refused because another app owns
        its name."""
        refused: list[str] = []
        for name in [n for n, t in self._tools.items() if t.app_key == app_key]:
            del self._tools[name]
        for tool in tools:
            owner = self._tools.get(tool.name)
            if owner is not None and owner.app_key != app_key:
                refused.append(
                    f"tool {tool.name!r} of app {tool.app_name!r} conflicts with app {owner.app_name!r}; "
                    f"kept {owner.app_name!r}"
                )
                continue
            self._tools[tool.name] = tool
        return refused

    def remove_app(self, app_key: tuple[str, str]) -> None:
        self.replace_app(app_key, [])


def check_no_conflicts(tool_sets: Mapping[str, Iterable[CatalogTool]]) -> None:
    """Start-up check over every app's tools: a shared prefixed name fails, naming both apps."""
    owners: dict[str, str] = {}
    problems: list[str] = []
    for app_name, tools in tool_sets.items():
        for tool in tools:
            other = owners.setdefault(tool.name, app_name)
            if other != app_name:
                problems.append(f"apps {other!r} and {app_name!r} both expose {tool.name!r}")
    if problems:
        raise CatalogConflict("duplicate prefixed tool names: " + "; ".join(problems))
