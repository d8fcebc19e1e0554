"""Building the request from a mapping (pure): placement, encoding, types, refusals."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from services.mcp_gateway.systems.request import RequestBuildError, build_request
from shared.contracts.tooldef import HttpExecution, HttpParam


def execution(path: str = "/d/{id}", *params: HttpParam, body_param: str | None = None,
              method: str = "POST") -> HttpExecution:
    return HttpExecution(method=method, path=path, params=params, body_param=body_param)  # type: ignore[arg-type]


ID = HttpParam(name="id", location="path", required=True)


def test_path_query_header_and_body_placement() -> None:
    parts = build_request(
        execution("/d/{device-id}/x", HttpParam(name="device_id", wire_name="device-id", location="path",
                                                 required=True),
                  HttpParam(name="q", location="query"), HttpParam(name="flag", location="query"),
                  HttpParam(name="skip", location="query"), HttpParam(name="trace", location="header",
                                                                     wire_name="X-Trace"),
                  HttpParam(name="body_id", location="body", wire_name="id"),
                  HttpParam(name="v", location="body")),
        "http://h:1/api/", {"device_id": "a/b?c", "q": [1, 2.0, "z"], "flag": False, "skip": None,
                             "trace": ["a", 1], "body_id": 7, "v": None})
    assert parts.url == "http://h:1/api/d/a%2Fb%3Fc/x"
    assert parts.query == [("q", "1"), ("q", "2.0"), ("q", "z"), ("flag", "false")]
    assert parts.headers == {"X-Trace": "a,1", "Content-Type": "application/json"}
    assert parts.body is not None and json.loads(parts.body) == {"id": 7, "v": None}


def test_no_body_without_body_arguments() -> None:
    parts = build_request(execution("/d/{id}", ID, HttpParam(name="v", location="body")), "http://h", {"id": 1})
    assert parts.body is None and "Content-Type" not in parts.headers and parts.url == "http://h/d/1"


@pytest.mark.parametrize(("arguments", "message"), [
    ({}, "missing required argument(s): id"),
    ({"id": None}, "missing required argument(s): id"),
    ({"id": 1, "extra": 2}, "unexpected argument(s): extra"),
    ({"id": 1, "h": "ünïcode"}, "header argument `h` must be one line of ASCII text"),
    ({"id": 1, "h": "a\r\nInjected: 1"}, "header argument `h` must be one line of ASCII text"),
    ({"id": 1, "v": math.nan}, "an argument is not valid JSON"),
])
def test_refusals_name_the_problem(arguments: dict[str, Any], message: str) -> None:
    mapping = execution("/d/{id}", ID, HttpParam(name="h", location="header"), HttpParam(name="v", location="body"))
    with pytest.raises(RequestBuildError) as caught:
        build_request(mapping, "http://h", arguments)
    assert caught.value.code == "invalid_arguments"
    assert message in caught.value.message


def test_schema_required_and_nullable_body_fields() -> None:
    mapping = execution("/x", HttpParam(name="v", location="body"), HttpParam(name="q", location="query"))
    assert build_request(mapping, "http://h", {"v": None, "q": 1}, required=["v"]).body == b'{"v": null}'
    with pytest.raises(RequestBuildError, match="missing required argument"):
        build_request(mapping, "http://h", {"v": 1, "q": None}, required=["q"])


def test_bad_mappings() -> None:
    with pytest.raises(RequestBuildError) as caught:
        build_request(execution("/d/{id}/{other}", ID), "http://h", {"id": 1})
    assert caught.value.code == "invalid_mapping" and "{other}" in caught.value.message
    both = execution("/x", HttpParam(name="body", location="body"), HttpParam(name="v", location="body"),
                     body_param="body")
    with pytest.raises(RequestBuildError) as caught:
        build_request(both, "http://h", {})
    assert caught.value.code == "invalid_mapping"


def test_whole_body_keeps_any_json_value() -> None:
    mapping = execution("/x", HttpParam(name="body", location="body", required=True), body_param="body")
    values: list[Any] = [[1, 1.0, True, None, {"a": []}], "text", 0, 2.5, {"nested": {"x": 1.0}}]
    for value in values:
        parts = build_request(mapping, "http://h", {"body": value})
        assert parts.body is not None and json.loads(parts.body) == value
    assert build_request(mapping, "http://h", {"body": 1.0}).body == b"1.0"


@pytest.mark.parametrize(("value", "segment"), [
    ("..", "%2E%2E"), (".", "%2E"), ("...", "%2E%2E%2E"), ("a.b", "a.b"), ("a/../b", "a%2F..%2Fb"),
    ("~_-", "~_-"), ("ü x", "%C3%BC%20x"), ("%2e", "%252e"),
])
def test_a_path_value_stays_one_segment(value: str, segment: str) -> None:
    assert build_request(execution("/d/{id}", ID), "http://h", {"id": value}).url == f"http://h/d/{segment}"


def test_an_empty_path_value_is_refused() -> None:
    with pytest.raises(RequestBuildError, match="path argument `id` is empty"):
        build_request(execution("/d/{id}", ID), "http://h", {"id": ""})
