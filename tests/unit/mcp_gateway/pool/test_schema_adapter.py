"""Tool Schema Adapter: OpenAI function descriptions under names LLM APIs accept, mapped back
exactly, and a clear error when two tools would share a function name."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.mcp_gateway.pool.live_catalog import CatalogTool
from services.mcp_gateway.pool.schema_adapter import NameCollision, build_name_map, llm_name, llm_tools

LLM_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_-", min_size=1, max_size=40)
_package = st.lists(_segment, min_size=1, max_size=6).map(".".join)
_tool = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=80)
dotted = st.tuples(_package, _tool).map(lambda p: f"{p[0]}.{p[1]}")


def catalog_tool(name: str, schema: Mapping[str, Any] | None = None, description: str = "") -> CatalogTool:
    package, _, tool = name.rpartition(".")
    return CatalogTool(name=name, app_id=package, instance="default", app_name=package, tool=tool,
                       description=description, input_schema=schema if schema is not None else {"type": "object"})


def test_a_dotted_name_becomes_a_readable_llm_name() -> None:
    assert llm_name("im.polaris.weather.get_weather") == "im_polaris_weather__get_weather"
    assert llm_name("time.get_current_time") == "time__get_current_time"


def test_a_very_long_name_is_shortened_with_a_digest_and_stays_distinct() -> None:
    base = "com.example." + "very_long_package_segment." * 6
    names = [f"{base}tool_{i}" for i in range(50)]
    mapped = build_name_map(names)
    assert all(LLM_NAME.fullmatch(n) for n in mapped.to_tool)
    assert len(set(mapped.to_tool)) == 50
    assert all(mapped.tool_for(mapped.to_llm[n]) == n for n in names)


def test_names_that_only_a_lossy_replacement_would_merge_stay_apart() -> None:
    """Non-ASCII tool names all become underscores; each still gets its own function name."""
    names = ["im.polaris.cn.查询", "im.polaris.cn.搜索", "im.polaris.cn.天气.预报"]
    mapped = build_name_map(names)
    assert len(set(mapped.to_tool)) == 3
    assert all(LLM_NAME.fullmatch(n) for n in mapped.to_tool)


@given(st.sets(dotted, min_size=1, max_size=40))
def test_every_set_of_names_maps_to_valid_names_and_back(names: set[str]) -> None:
    try:
        mapped = build_name_map(names)
    except NameCollision as exc:  # allowed only for a genuine collision, which it must name
        message = str(exc)
        assert sum(f"{n!r}" in message for n in names) == 2
        return
    assert set(mapped.to_llm) == names
    for name in names:
        assert LLM_NAME.fullmatch(mapped.to_llm[name]), mapped.to_llm[name]
        assert mapped.tool_for(mapped.to_llm[name]) == name


def test_two_names_mapping_to_one_function_name_are_a_collision_naming_both() -> None:
    with pytest.raises(NameCollision) as raised:
        build_name_map(["a.b.c", "a_b.c"])  # both read `a_b__c`
    assert "'a.b.c'" in str(raised.value) and "'a_b.c'" in str(raised.value) and "'a_b__c'" in str(raised.value)


def test_the_same_name_twice_is_not_a_collision() -> None:
    assert build_name_map(["x.y", "x.y"]).to_llm == {"x.y": "x__y"}


def test_tools_become_openai_function_descriptions() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    described, names = llm_tools([
        catalog_tool("im.polaris.weather.get_weather", schema, "Current weather."),
        catalog_tool("time.now", {}, ""),
    ])
    assert described[0] == {"type": "function", "function": {
        "name": "im_polaris_weather__get_weather", "description": "Current weather.", "parameters": schema}}
    # No schema and no description still make a valid function: an object and the tool's name.
    assert described[1]["function"]["parameters"] == {"type": "object", "properties": {}}
    assert described[1]["function"]["description"] == "time.now"
    assert names.tool_for("time__now") == "time.now" and names.tool_for("nope") is None


def test_a_long_description_is_cut_and_the_schema_is_not_shared() -> None:
    tool = catalog_tool("a.b", {"properties": {}}, "x" * 5000)
    described, _ = llm_tools([tool])
    assert len(described[0]["function"]["description"]) == 1024
    assert described[0]["function"]["parameters"] == {"properties": {}, "type": "object"}
    assert "type" not in tool.input_schema  # the catalog's schema was not modified
