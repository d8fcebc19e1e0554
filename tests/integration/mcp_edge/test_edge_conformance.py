"""MCP 2026-07-28 at the edge, to the letter (docs/reference/mcp-conformance.md names each rule):
the request headers checked against the body, the version refused with its code, what every
result carries, the list's order, the client's trace continued, and the verbs of the old era
refused. Raw HTTP where the rule is about the wire; the official SDK client where it speaks it."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NATS

from shared.nats.admin_service import admin_request
from tests.harness.processes import logged
from tests.harness.stack import Stack
from tests.harness.waiting import poll
from tests.integration.mcp_edge.helpers import (
    COUNTER_GET,
    COUNTER_INC,
    ECHO_TOOL,
    LEGACY,
    MODERN,
    SUBJECTS,
    agent,
    audit_records,
    connected,
    token,
)

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "1"}}
HEADER_MISMATCH = -32020
UNSUPPORTED_VERSION = -32022
WAITING = re.compile(r"waiting for approval (apr-[0-9a-f]+)")


def request(method: str, params: dict[str, Any] | None = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**(params or {}), "_meta": meta or META}}


def headers(secret: str, method: str | None, *, version: str | None = MODERN, name: str | None = None,
            **extra: str) -> dict[str, str]:
    sent = {"Authorization": f"Bearer {secret}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json", **extra}
    for key, value in (("MCP-Protocol-Version", version), ("Mcp-Method", method), ("Mcp-Name", name)):
        if value is not None:
            sent[key] = value
    return sent


async def endpoint(stack: Stack, nc: NATS, agent_id: str, tools: list[str]) -> tuple[str, str]:
    await agent(nc, agent_id, tools)
    return stack.endpoint(agent_id), (await token(nc, agent_id))["token"]


async def test_a_request_whose_headers_disagree_with_its_body_is_refused(edge_stack: Stack, enc: NATS) -> None:
    url, secret = await endpoint(edge_stack, enc, "conf-headers", [ECHO_TOOL])
    call = request("tools/call", {"name": ECHO_TOOL, "arguments": {"value": 1}})
    async with httpx.AsyncClient(timeout=20) as http:
        for label, sent in [
            ("no Mcp-Method", headers(secret, None, name=ECHO_TOOL)),
            ("another Mcp-Method", headers(secret, "tools/list", name=ECHO_TOOL)),
            ("no Mcp-Name", headers(secret, "tools/call")),
            ("another Mcp-Name", headers(secret, "tools/call", name=COUNTER_GET)),
            ("another version header", headers(secret, "tools/call", version="2026-07-29", name=ECHO_TOOL)),
            ("no version header", headers(secret, "tools/call", version=None, name=ECHO_TOOL)),
        ]:
            refused = await http.post(url, json=call, headers=sent)
            assert refused.status_code == 400, (label, refused.text)
            assert refused.json()["error"]["code"] == HEADER_MISMATCH, (label, refused.text)
        # the name in the Base64 sentinel form is the same name
        encoded = "=?base64?dGVzdC5lY2hvLmVjaG8=?="
        served = await http.post(url, json=call, headers=headers(secret, "tools/call", name=encoded))
        assert served.status_code == 200 and served.json()["result"]["structuredContent"] == {"value": 1}, served.text


async def test_an_unsupported_version_is_refused_with_the_supported_ones(edge_stack: Stack, enc: NATS) -> None:
    url, secret = await endpoint(edge_stack, enc, "conf-version", [ECHO_TOOL])
    future = "2099-01-01"
    body = request("tools/list", meta={**META, "io.modelcontextprotocol/protocolVersion": future})
    async with httpx.AsyncClient(timeout=20) as http:
        refused = await http.post(url, json=body, headers=headers(secret, "tools/list", version=future))
        unknown = await http.post(url, json=request("no/such"), headers=headers(secret, "no/such"))
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == UNSUPPORTED_VERSION and error["data"]["requested"] == future, error
    assert MODERN in error["data"]["supported"], error
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32601, unknown.text


async def test_a_request_without_its_envelope_is_invalid_and_a_notification_accepted(
        edge_stack: Stack, enc: NATS) -> None:
    url, secret = await endpoint(edge_stack, enc, "conf-envelope", [ECHO_TOOL])
    bare = {"jsonrpc": "2.0", "id": 8, "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}}  # no client capabilities
    notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99, "_meta": META}}
    async with httpx.AsyncClient(timeout=20) as http:
        invalid = await http.post(url, json=bare, headers=headers(secret, "tools/list"))
        accepted = await http.post(url, json=notice, headers=headers(secret, "notifications/cancelled"))
    assert invalid.status_code == 400 and invalid.json()["error"]["code"] == -32602, invalid.text
    assert accepted.status_code == 202 and accepted.content == b"", accepted.text


async def test_every_result_says_its_type_and_the_list_how_long_it_keeps(edge_stack: Stack, enc: NATS) -> None:
    url, secret = await endpoint(edge_stack, enc, "conf-results", [ECHO_TOOL])
    async with httpx.AsyncClient(timeout=20) as http:
        answers = {method: await http.post(url, json=request(method, params),
                                           headers=headers(secret, method, name=name))
                   for method, params, name in [
                       ("server/discover", None, None), ("tools/list", None, None),
                       ("tools/call", {"name": ECHO_TOOL, "arguments": {"value": 2}}, ECHO_TOOL)]}
    results = {method: answer.json()["result"] for method, answer in answers.items()}
    assert all(r["resultType"] == "complete" for r in results.values()), results
    listed = results["tools/list"]
    # the set is the token's agent's: no shared cache may keep it for another caller
    assert isinstance(listed["ttlMs"], int) and listed["ttlMs"] >= 0 and listed["cacheScope"] == "private", listed
    discovered = results["server/discover"]
    assert MODERN in discovered["supportedVersions"] and discovered["capabilities"]["tools"], discovered
    server = {r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] for r in results.values()}
    assert server == {"aurora-mcp-edge"}, results


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_tools_are_listed_in_one_order_whatever_the_agent_declared(
        edge_stack: Stack, enc: NATS, mode: str) -> None:
    agent_id = f"conf-order-{mode.replace('-', '')}"
    url, secret = await endpoint(edge_stack, enc, agent_id, [ECHO_TOOL, COUNTER_GET])
    async with connected(url, secret, mode) as client:
        first = [t.name for t in (await client.list_tools()).tools]
        await agent(enc, agent_id, [COUNTER_GET, ECHO_TOOL])  # the same set, declared the other way round
        second = [t.name for t in (await client.list_tools()).tools]
    assert first == second == sorted([ECHO_TOOL, COUNTER_GET]), (first, second)


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_the_clients_trace_is_the_calls_trace(edge_stack: Stack, enc: NATS, mode: str) -> None:
    agent_id = f"conf-trace-{mode.replace('-', '')}"
    url, secret = await endpoint(edge_stack, enc, agent_id, [ECHO_TOOL])
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736" if mode == MODERN else "0af7651916cd43dd8448eb211c80319c"
    meta: Any = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01", "tracestate": "vendor=aurora-test"}
    async with connected(url, secret, mode) as client:
        result = await client.call_tool(ECHO_TOOL, {"value": "traced"}, meta=meta)
    assert not result.is_error, result

    async def audited() -> list[dict[str, Any]]:
        return [r for r in await audit_records(enc) if r.get("agent") == agent_id and r.get("status") == "ok"]

    record = (await poll(audited, what="the traced call's audit record"))[0]
    # the gateway's span for the call is in the client's trace (with tracing off, it is the client's own span)
    assert record["trace"]["traceparent"].split("-")[1] == trace_id, record


async def test_the_stateless_era_has_no_get_delete_or_session(edge_stack: Stack, enc: NATS) -> None:
    url, secret = await endpoint(edge_stack, enc, "conf-verbs", [ECHO_TOOL])
    async with httpx.AsyncClient(timeout=20) as http:
        for verb in ("GET", "DELETE"):
            refused = await http.request(verb, url, headers=headers(secret, None))
            assert refused.status_code == 405 and refused.headers["allow"] == "POST", (verb, refused.text)
        # a session id sent with a 2026-07-28 request is ignored: none is checked, minted or echoed
        listed = await http.post(url, json=request("tools/list"),
                                 headers=headers(secret, "tools/list", **{"Mcp-Session-Id": "no-such-session"}))
        assert listed.status_code == 200 and "mcp-session-id" not in listed.headers, listed.text
        # the 2025-11-25 era keeps its GET stream: without a session it is still asked for one
        legacy = await http.get(url, headers=headers(secret, None, version="2025-11-25"))
        assert legacy.status_code == 400 and "Mcp-Session-Id" in legacy.json()["error"]["message"], legacy.text


async def test_a_client_that_goes_cancels_its_held_call(edge_stack: Stack, enc: NATS) -> None:
    """Closing the response stream is the 2026-07-28 cancellation: the held write stops waiting,
    and its approval, granted later, runs nothing."""
    url, secret = await endpoint(edge_stack, enc, "conf-cancel", [COUNTER_INC, COUNTER_GET])
    call = request("tools/call", {"name": COUNTER_INC, "arguments": {"key": "conf-cancel"}},
                   meta={**META, "progressToken": "held-1"})
    async with (httpx.AsyncClient(timeout=20) as http,
                http.stream("POST", url, json=call, headers=headers(secret, "tools/call", name=COUNTER_INC)) as held):
        assert held.headers["content-type"].startswith("text/event-stream"), held.headers
        async for line in held.aiter_lines():  # the progress note names the approval; then the client goes
            found = WAITING.search(line)
            if found:
                approval_id = found.group(1).rstrip('",)')
                break
    await logged(edge_stack.processes["edge-0"],
                 f'"msg": "held call cancelled: nothing will run", "approval": "{approval_id}"')
    await admin_request(enc, SUBJECTS, "approvals", "grant", {"id": approval_id, "note": "after the client went"})
    async with connected(url, secret, MODERN) as client:
        counted = await client.call_tool(COUNTER_GET, {"key": "conf-cancel"})
    assert counted.structured_content == {"key": "conf-cancel", "count": 0}, counted
    approval = await admin_request(enc, SUBJECTS, "approvals", "get", {"id": approval_id})
    assert approval["state"] == "granted", approval  # granted, never used


async def test_a_call_without_a_log_level_gets_its_result_and_nothing_else(edge_stack: Stack, enc: NATS) -> None:
    """"servers MUST NOT emit `notifications/message` for requests that did not include" the log
    level: the whole response of such a call is its one result."""
    url, secret = await endpoint(edge_stack, enc, "conf-quiet", [ECHO_TOOL])
    call = request("tools/call", {"name": ECHO_TOOL, "arguments": {"value": "quiet"}})
    async with httpx.AsyncClient(timeout=20) as http:
        answered = await http.post(url, json=call, headers=headers(secret, "tools/call", name=ECHO_TOOL))
    if answered.headers["content-type"].startswith("text/event-stream"):
        messages = [json.loads(line[5:]) for line in answered.text.splitlines() if line.startswith("data:")]
    else:
        messages = [answered.json()]
    assert [m.get("id") for m in messages] == [7] and "method" not in messages[0], messages
    assert messages[0]["result"]["structuredContent"] == {"value": "quiet"}, messages
