"""Tool Schema Adapter: catalog tools → LLM tool descriptions (OpenAI function calling).

LLM APIs allow tool names matching `^[a-zA-Z0-9_-]{1,64}$`; Aurora's names are dotted. The
mapping is a table built over a set of tools, so it is reversible whatever the names, and two
names that would map to one LLM name are a clear error rather than a silent overwrite.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.mcp_gateway.pool.live_catalog import CatalogTool
from shared.errors import AuroraError

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 64


class NameCollision(AuroraError):
    """Two tool names map to the same LLM function name."""


def llm_name(name: str) -> str:
    """`im.polaris.weather.get_weather` → `im_polaris_weather__get_weather`-like, ≤ 64 chars.

    A name that had to be shortened, or that had characters other than the package's dots
    replaced (`查询` and `搜索` would both read `__`), ends in a digest of the full name."""
    package, _, tool = name.rpartition(".")
    safe_package, safe_tool = _UNSAFE.sub("_", package), _UNSAFE.sub("_", tool)
    candidate = f"{safe_package}__{safe_tool}" if package else safe_tool
    lossy = safe_tool != tool or safe_package != package.replace(".", "_")
    if len(candidate) <= MAX_NAME and not lossy:
        return candidate
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{candidate[: MAX_NAME - 9]}_{digest}"


@dataclass(frozen=True)
class NameMap:
    to_llm: dict[str, str]
    to_tool: dict[str, str]

    def tool_for(self, function_name: str) -> str | None:
        return self.to_tool.get(function_name)


def build_name_map(names: Iterable[str]) -> NameMap:
    to_llm: dict[str, str] = {}
    to_tool: dict[str, str] = {}
    for name in sorted(set(names)):
        mapped = llm_name(name)
        if mapped in to_tool:
            raise NameCollision(f"tools {to_tool[mapped]!r} and {name!r} both map to LLM name {mapped!r}")
        to_llm[name] = mapped
        to_tool[mapped] = name
    return NameMap(to_llm=to_llm, to_tool=to_tool)


def llm_function(function_name: str, description: str, input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """One OpenAI function-calling tool description."""
    schema = dict(input_schema) or {"type": "object", "properties": {}}
    schema.setdefault("type", "object")
    return {
        "type": "function",
        "function": {"name": function_name, "description": description[:1024], "parameters": schema},
    }


def llm_tool(tool: CatalogTool, function_name: str) -> dict[str, Any]:
    return llm_function(function_name, tool.description or tool.name, tool.input_schema)


def llm_tools(tools: Iterable[CatalogTool]) -> tuple[list[dict[str, Any]], NameMap]:
    tools = list(tools)
    names = build_name_map(t.name for t in tools)
    return [llm_tool(t, names.to_llm[t.name]) for t in tools], names
