"""The edge's pure parts: RFC 9728 metadata, the set's fingerprint, gateway results as MCP."""

from __future__ import annotations

from services.mcp_edge.changes import fingerprint
from services.mcp_edge.eras import initialize_of, without_version_header
from services.mcp_edge.gate import EdgeTool, tools_from_reply
from services.mcp_edge.http_app import metadata_url, protected_resource
from services.mcp_edge.mcp_server import mcp_result, trace_of
from shared.contracts.envelope import Trace
from shared.contracts.toolcall import ToolCallResult, ToolError


def test_the_metadata_names_the_resource_and_the_header() -> None:
    document = protected_resource("https://edge.example", "ops", ("https://auth.example",))
    assert document["resource"] == "https://edge.example/agents/ops/mcp"
    assert document["bearer_methods_supported"] == ["header"]
    assert document["authorization_servers"] == ["https://auth.example"]
    assert "authorization_servers" not in protected_resource("https://edge.example", "ops", ())
    assert metadata_url("https://edge.example", "ops") == \
        "https://edge.example/.well-known/oauth-protected-resource/agents/ops/mcp"


def test_only_app_tools_are_offered() -> None:
    reply = {"tools": [{"type": "function", "function": {"name": "a_echo", "description": "Echo",
                                                         "parameters": {"type": "object"}}},
                       {"type": "function", "function": {"name": "event_reply", "description": "Reply"}}],
             "available": [{"name": "app.echo", "llm_name": "a_echo", "side_effect": "read"},
                           {"name": "event_reply", "llm_name": "event_reply", "side_effect": "write"}]}
    assert tools_from_reply(reply) == [EdgeTool("app.echo", "Echo", {"type": "object"}, "read")]


def test_the_fingerprint_changes_with_what_a_client_sees_only() -> None:
    one, two = EdgeTool("a.x", "X", {}, "read"), EdgeTool("a.y", "Y", {}, "write")
    assert fingerprint([one, two]) == fingerprint([two, one])
    assert fingerprint([one]) != fingerprint([one, two])
    assert fingerprint([one]) != fingerprint([EdgeTool("a.x", "X changed", {}, "read")])


def test_only_ok_is_a_success() -> None:
    ok = mcp_result(ToolCallResult(status="ok", content=[{"type": "text", "text": "hi"}], structured={"a": 1}))
    assert not ok.is_error and ok.structured_content == {"a": 1}
    denied = mcp_result(ToolCallResult(status="denied", error=ToolError(code="not_bound", message="no")))
    assert denied.is_error and denied.content[0].text == "denied: not_bound: no"  # type: ignore[union-attr]


def test_initialize_is_told_from_other_requests() -> None:
    assert initialize_of(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"x"}}') == \
        {"protocolVersion": "x"}
    assert initialize_of(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}') is None
    assert initialize_of(b"not json") is None


def test_a_body_naming_its_version_only_in_meta_is_a_header_mismatch() -> None:
    stateless = b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":' \
                b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}'
    refusal = without_version_header(stateless)
    assert refusal is not None and refusal["id"] == 3 and refusal["error"]["code"] == -32020
    assert without_version_header(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}') is None
    assert without_version_header(b"[") is None


def test_only_a_well_formed_traceparent_is_continued() -> None:
    good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert trace_of({"traceparent": good, "tracestate": "a=b"}) == Trace(traceparent=good, tracestate="a=b")
    for bad in ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-" + "0" * 32 + "-00f067aa0ba902b7-01",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01", "garbage", 7):
        assert trace_of({"traceparent": bad}) is None, bad
    assert trace_of(None) is None
