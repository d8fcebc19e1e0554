"""The tool catalog: `<package>.<tool>` names, one owner per name, start-up conflicts named."""

from __future__ import annotations

from typing import Any

import pytest

from services.mcp_gateway.pool.live_catalog import (
    CatalogConflict,
    CatalogTool,
    ToolCatalog,
    check_no_conflicts,
    prefixed_name,
    side_effect_of_annotations,
)

WEATHER = ("im.polaris.weather", "default")
OTHER = ("im.polaris.other", "default")


def tool(package: str, name: str, *, app_name: str | None = None, instance: str = "default",
         annotations: dict[str, Any] | None = None) -> CatalogTool:
    return CatalogTool(
        name=prefixed_name(package, name), app_id=package, instance=instance, app_name=app_name or package,
        tool=name, description=f"{name} of {package}", input_schema={"type": "object"},
        annotations=annotations or {}, side_effect=side_effect_of_annotations(annotations),
    )


def test_a_tool_is_named_by_its_package() -> None:
    assert prefixed_name("im.polaris.weather", "get_weather") == "im.polaris.weather.get_weather"
    assert prefixed_name("time", "get_current_time") == "time.get_current_time"


def test_an_apps_tools_are_set_replaced_and_removed_as_a_whole() -> None:
    catalog = ToolCatalog()
    assert catalog.replace_app(WEATHER, [tool(*WEATHER[:1], "get_weather"), tool(*WEATHER[:1], "emit")]) == []
    assert [t.name for t in catalog.tools()] == ["im.polaris.weather.emit", "im.polaris.weather.get_weather"]
    assert catalog.count(WEATHER) == 2

    catalog.replace_app(WEATHER, [tool(*WEATHER[:1], "get_weather")])  # a refreshed list drops `emit`
    assert catalog.get("im.polaris.weather.emit") is None
    assert catalog.get("im.polaris.weather.get_weather") is not None

    catalog.remove_app(WEATHER)
    assert catalog.tools() == [] and catalog.count(WEATHER) == 0


def test_a_second_owner_of_a_name_is_refused_and_the_first_kept() -> None:
    catalog = ToolCatalog()
    first = tool("shared.pkg", "lookup", app_name="first")
    catalog.replace_app(("shared.pkg", "a"), [first])
    second = tool("shared.pkg", "lookup", app_name="second", instance="b")

    refused = catalog.replace_app(("shared.pkg", "b"), [second, tool("shared.pkg", "only_b", app_name="second",
                                                                     instance="b")])

    assert len(refused) == 1
    assert "'shared.pkg.lookup'" in refused[0] and "'first'" in refused[0] and "'second'" in refused[0]
    assert catalog.get("shared.pkg.lookup") is first  # never silently overwritten
    assert catalog.get("shared.pkg.only_b") is not None  # the rest of the app is still served


def test_tools_can_be_listed_per_app() -> None:
    catalog = ToolCatalog()
    catalog.replace_app(WEATHER, [tool("im.polaris.weather", "get_weather")])
    catalog.replace_app(OTHER, [tool("im.polaris.other", "x")])
    assert [t.name for t in catalog.tools("im.polaris.other")] == ["im.polaris.other.x"]


def test_a_start_up_conflict_names_both_apps_and_the_tool() -> None:
    with pytest.raises(CatalogConflict) as raised:
        check_no_conflicts({
            "weather-a": [tool("a.b", "c.d", app_name="weather-a")],
            "weather-b": [tool("a.b.c", "d", app_name="weather-b"), tool("a.b.c", "e", app_name="weather-b")],
        })
    message = str(raised.value)
    assert "'weather-a'" in message and "'weather-b'" in message and "'a.b.c.d'" in message
    assert "a.b.c.e" not in message


def test_distinct_names_pass_the_start_up_check() -> None:
    check_no_conflicts({"a": [tool("a", "x"), tool("a", "y")], "b": [tool("b", "x")]})


@pytest.mark.parametrize(("annotations", "expected"), [
    (None, "write"),
    ({}, "write"),
    ({"title": "Get weather"}, "write"),
    ({"readOnlyHint": True}, "read"),
    ({"readOnlyHint": True, "destructiveHint": True}, "read"),  # read-only wins: nothing is modified
    ({"readOnlyHint": False}, "write"),
    ({"readOnlyHint": False, "destructiveHint": False}, "write"),
    ({"destructiveHint": True}, "dangerous"),
    ({"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}, "dangerous"),
    ({"readOnlyHint": "true"}, "write"),  # only a real boolean counts
])
def test_side_effect_from_annotations(annotations: dict[str, Any] | None, expected: str) -> None:
    assert side_effect_of_annotations(annotations) == expected
