"""Hostile OpenAPI documents are refused quickly, each with the limit (and its setting) named."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from services.mcp_gateway.systems.limits import Budget, OpenApiError, OpenApiLimitExceeded, OpenApiLimits
from services.mcp_gateway.systems.openapi_fetch import is_url, read_spec_file
from services.mcp_gateway.systems.openapi_import import import_operations
from services.mcp_gateway.systems.openapi_load import parse_openapi
from shared.errors import ConfigError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "openapi"
FANOUT = FIXTURES / "hostile-fanout-3.0.json"
BOMB = FIXTURES / "hostile-alias-bomb.yaml"
HEAD = 'openapi: 3.0.3\ninfo: {title: t, version: "1"}\n'


def convert(text: str, limits: OpenApiLimits | None = None) -> Any:
    budget = Budget(limits or OpenApiLimits())
    document = parse_openapi(text, "doc", budget)
    return import_operations(document, system="s", package="s", now="2026-01-01T00:00:00+00:00", by="t",
                             budget=budget)


def refused(text: str, limits: OpenApiLimits | None = None) -> OpenApiLimitExceeded:
    started = time.monotonic()
    with pytest.raises(OpenApiLimitExceeded) as caught:
        convert(text, limits)
    # Seconds, not minutes: on a quiet machine each of these takes well under one.
    assert time.monotonic() - started < 5.0, "a hostile document must be refused quickly"
    return caught.value


def body_schema(schema: dict[str, Any], components: dict[str, Any]) -> str:
    """A document with one operation whose JSON request body is `schema`."""
    operation = {"operationId": "op", "requestBody": {"content": {"application/json": {"schema": schema}}},
                 "responses": {"200": {"description": "ok"}}}
    return json.dumps({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
                       "components": {"schemas": components}, "paths": {"/x": {"post": operation}}})


def test_the_fan_out_document_is_refused_naming_the_node_limit() -> None:
    text = FANOUT.read_text()
    assert len(text) < 2500
    error = refused(text)
    assert str(error) == "the expanded schemas exceed 200000 nodes (AURORA_OPENAPI_MAX_NODES)"
    assert error.setting == "AURORA_OPENAPI_MAX_NODES"


def test_the_alias_bomb_is_refused_before_it_is_spelled_out() -> None:
    text = BOMB.read_text()
    assert len(text) < 430
    error = refused(text)
    assert "expands to more than 200000 values (YAML aliases spelled out)" in str(error)
    assert error.setting == "AURORA_OPENAPI_MAX_NODES"


def test_yaml_aliases_within_the_budget_are_fine() -> None:
    text = HEAD + "paths: {}\nx-shared: &s {a: 1}\nx-again: *s\n"
    assert convert(text).tools == ()


def test_a_yaml_alias_inside_itself_is_refused() -> None:
    with pytest.raises(OpenApiError, match="a YAML alias refers to a node that contains it"):
        convert(HEAD + "paths: {}\nx-loop: &a [*a]\n")


@pytest.mark.parametrize("text", ['{"a":' + "[" * 5000 + "]" * 5000 + "}",
                                  HEAD + "paths: {}\nx: " + "[" * 100_000 + "]" * 100_000 + "\n"])
def test_deep_nesting_is_refused_not_a_recursion_crash(text: str) -> None:
    assert "nests deeper than 64 levels (AURORA_OPENAPI_MAX_DEPTH)" in str(refused(text))


def test_a_document_over_the_size_limit_is_refused() -> None:
    error = refused(HEAD + "paths: {}\nx-pad: '" + "a" * 2000 + "'\n", OpenApiLimits(max_bytes=1000))
    assert "the document is larger than 1000 bytes (AURORA_OPENAPI_MAX_BYTES)" in str(error)


def test_a_chain_of_nested_refs_past_the_ref_depth_is_refused() -> None:
    components = {f"S{i}": {"type": "object", "properties": {"next": {"$ref": f"#/components/schemas/S{i + 1}"}}}
                  for i in range(40)}
    components["S40"] = {"type": "string"}
    error = refused(body_schema({"$ref": "#/components/schemas/S0"}, components))
    assert "nests more than 32 $refs inside one another" in str(error)
    assert error.setting == "AURORA_OPENAPI_MAX_REF_DEPTH"
    # the same chain passes when the limits allow it: the limit, not the shape, refused it
    convert(body_schema({"$ref": "#/components/schemas/S0"}, components),
            OpenApiLimits(max_ref_depth=64, max_depth=200))


def test_recursion_that_defeats_sharing_still_stops_at_the_node_limit() -> None:
    # Each schema also refers to itself: its expansion cuts a recursion, so it cannot be shared.
    components = {f"S{i}": {"type": "object", "properties": {
        "me": {"$ref": f"#/components/schemas/S{i}"}, "l": {"$ref": f"#/components/schemas/S{i + 1}"},
        "r": {"$ref": f"#/components/schemas/S{i + 1}"}}} for i in range(24)}
    components["S24"] = {"type": "string"}
    error = refused(body_schema({"$ref": "#/components/schemas/S0"}, components), OpenApiLimits(max_nodes=5_000))
    assert str(error).endswith("the expanded schemas exceed 5000 nodes (AURORA_OPENAPI_MAX_NODES)")


def test_the_time_budget_stops_a_slow_conversion() -> None:
    components = {f"S{i}": {"type": "object", "properties": {
        "me": {"$ref": f"#/components/schemas/S{i}"}, "l": {"$ref": f"#/components/schemas/S{i + 1}"},
        "r": {"$ref": f"#/components/schemas/S{i + 1}"}}} for i in range(30)}
    components["S30"] = {"type": "string"}
    error = refused(body_schema({"$ref": "#/components/schemas/S0"}, components),
                    OpenApiLimits(max_nodes=10**12, seconds=0.3))
    assert "takes longer than 0.3 s (AURORA_OPENAPI_SECONDS)" in str(error)


def test_the_limits_are_settings_checked_at_start_up(tmp_path: Path) -> None:
    limits = OpenApiLimits.from_env({"AURORA_OPENAPI_MAX_NODES": "5000", "AURORA_OPENAPI_SECONDS": "2.5",
                                     "AURORA_SPECS_DIR": str(tmp_path)})
    assert (limits.max_nodes, limits.seconds, limits.specs_dir) == (5000, 2.5, tmp_path.resolve())
    assert OpenApiLimits.from_env({}).specs_dir == (Path.cwd() / "specs").resolve()
    with pytest.raises(ConfigError, match="AURORA_OPENAPI_MAX_BYTES"):
        OpenApiLimits.from_env({"AURORA_OPENAPI_MAX_BYTES": "lots"})
    with pytest.raises(ConfigError, match=r"AURORA_OPENAPI_SECONDS='0' is not valid: it must be a number of at least"):
        OpenApiLimits.from_env({"AURORA_OPENAPI_SECONDS": "0"})


# --------------------------------------------------------------------------- where specs are read from


def test_spec_files_are_read_only_below_the_allowed_folder(tmp_path: Path) -> None:
    allowed = tmp_path / "specs"
    (allowed / "team").mkdir(parents=True)
    (allowed / "team" / "api.yaml").write_text(HEAD + "paths: {}\n")
    outside = tmp_path / "secret.yaml"
    outside.write_text("password: x\n")
    (allowed / "link.yaml").symlink_to(outside)
    assert read_spec_file("team/api.yaml", 10_000, allowed=allowed).startswith("openapi")
    assert read_spec_file(str(allowed / "team" / "api.yaml"), 10_000, allowed=allowed).startswith("openapi")
    for sneaky in (str(outside), "../secret.yaml", "team/../../secret.yaml", "link.yaml", "/etc/passwd"):
        with pytest.raises(OpenApiError, match=r"reads spec files only below .*specs \(AURORA_SPECS_DIR\)"):
            read_spec_file(sneaky, 10_000, allowed=allowed)


def test_a_fifo_or_a_large_file_is_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    with pytest.raises(OpenApiError, match="not a regular file"):
        read_spec_file("pipe.yaml", 10_000, allowed=tmp_path)
    (tmp_path / "big.yaml").write_text("a" * 2000)
    with pytest.raises(OpenApiLimitExceeded, match="larger than 1000 bytes"):
        read_spec_file("big.yaml", 1000, allowed=tmp_path)


def test_only_http_urls_are_urls() -> None:
    assert is_url("https://example.com/openapi.json") and not is_url("specs/api.yaml")
    for other in ("file:///etc/passwd", "ftp://example.com/api.yaml"):
        with pytest.raises(OpenApiError, match="only http:// and https:// URLs are fetched"):
            is_url(other)
