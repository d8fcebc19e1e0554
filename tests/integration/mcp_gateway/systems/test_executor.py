"""The HTTP executor against a real HTTP server: exact request bytes, every outcome class."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.mcp_gateway.systems.executor import MAX_TEXT_BYTES, HttpExecutor
from services.mcp_gateway.systems.secrets import DeclaredSecrets
from shared.contracts.system import AuthHeader, BusinessContract, System
from shared.contracts.tooldef import HttpExecution, HttpParam, SideEffect, ToolDefinition
from tests.integration.mcp_gateway.systems.recording_server import (
    Recorded,
    RecordingServer,
    Reply,
    Responder,
    free_port,
)


def system_for(url: str, **fields: Any) -> System:
    return System(name="plant", base_url=url, timeout_seconds=5.0, **fields)


def tool(method: str = "POST", path: str = "/devices/{deviceId}/rules", side_effect: SideEffect = "write",
         params: tuple[HttpParam, ...] = (), body_param: str | None = None,
         required: tuple[str, ...] = (), contract: BusinessContract | None = None) -> ToolDefinition:
    return ToolDefinition(
        name="plant.tool", system="plant", side_effect=side_effect,
        input_schema={"type": "object", "properties": {}, "required": list(required)},
        execution=HttpExecution(method=method, path=path, params=params, body_param=body_param,  # type: ignore[arg-type]
                                contract=contract),
    )


def typed_equal(a: Any, b: Any) -> bool:
    """Equality that also compares types at every level: 1 != 1.0, True != 1."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(typed_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(typed_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


EVERY_TYPE: dict[str, Any] = {
    "count": 3,
    "ratio": 1.0,
    "negative": -2.5,
    "big": 2**53 + 1,
    "enabled": False,
    "note": None,
    "text": "温度 > 80 °C \"quoted\"",
    "numbers": [1, 1.0, 0, -0.5, True, None, "1"],
    "nested": {"a": {"b": [{"c": 1.5e-7}, []]}, "empty": {}},
}
BODY_PARAMS = tuple(HttpParam(name=name, location="body") for name in EVERY_TYPE)


async def test_every_json_type_arrives_exactly(server: RecordingServer, client: httpx.AsyncClient) -> None:
    params = (HttpParam(name="deviceId", location="path", required=True),
              HttpParam(name="tag", location="query"), HttpParam(name="dry", location="query"),
              HttpParam(name="limit", location="query"),
              HttpParam(name="reason", location="header", wire_name="X-Reason"), *BODY_PARAMS)
    arguments = {"deviceId": "pump/7 a", "tag": ["hot", "north"], "dry": True, "limit": 10,
                 "reason": "maintenance", **EVERY_TYPE}
    result = await HttpExecutor(client).execute(system_for(server.url + "/api"), tool(params=params), arguments,
                                                idempotency_key="task-1:step-2")
    assert result.status == "ok", result
    [got] = server.requests
    assert got.method == "POST"
    assert got.target.startswith("/api/devices/pump%2F7%20a/rules?")
    assert got.query == [("tag", "hot"), ("tag", "north"), ("dry", "true"), ("limit", "10")]
    assert got.header("X-Reason") == "maintenance"
    assert got.header("Content-Type") == "application/json"
    parsed = json.loads(got.body)
    assert typed_equal(parsed, EVERY_TYPE), parsed
    # the float keeps its decimal point on the wire; the int has none; nothing became a string
    assert re.search(rb'"ratio":\s*1\.0[,}]', got.body)
    assert re.search(rb'"count":\s*3[,}]', got.body)
    assert re.search(rb'"big":\s*9007199254740993[,}]', got.body)
    assert re.search(rb'"enabled":\s*false[,}]', got.body)


async def test_a_whole_body_parameter_is_sent_as_the_body(server: RecordingServer,
                                                          client: httpx.AsyncClient) -> None:
    body = [{"metric": "temperature", "threshold": 80.0, "window": 30}, {"metric": "pressure", "threshold": 2}]
    definition = tool(method="PUT", path="/rules", params=(HttpParam(name="body", location="body", required=True),),
                      body_param="body")
    result = await HttpExecutor(client).execute(system_for(server.url), definition, {"body": body},
                                                idempotency_key=None)
    assert result.status == "ok"
    assert typed_equal(json.loads(server.requests[0].body), body)
    assert b"80.0" in server.requests[0].body


async def test_2xx_with_a_failure_code_is_a_business_error(server: RecordingServer,
                                                           client: httpx.AsyncClient) -> None:
    contract = BusinessContract(success_field="code", success_values=(0,), message_field="msg")
    server.reply = lambda r: Reply.json({"code": 1, "msg": "no such device"} if "bad" in r.target
                                        else {"code": 0, "data": {"value": 21.5}})
    executor, system = HttpExecutor(client), system_for(server.url, contract=contract)
    params = (HttpParam(name="deviceId", location="path", required=True),)
    read = tool(method="GET", path="/devices/{deviceId}", side_effect="read", params=params)

    failed = await executor.execute(system, read, {"deviceId": "bad"}, idempotency_key=None)
    assert failed.status == "business_error"
    assert failed.error is not None and failed.error.message == "no such device"
    assert failed.structured == {"code": 1, "msg": "no such device"}

    fine = await executor.execute(system, read, {"deviceId": "good"}, idempotency_key=None)
    assert fine.status == "ok" and fine.error is None
    assert fine.structured == {"code": 0, "data": {"value": 21.5}}
    assert json.loads(fine.content[0]["text"]) == fine.structured

    # one operation of the system answers differently: its own contract wins over the system's
    own = tool(method="GET", path="/devices/{deviceId}", side_effect="read", params=params,
               contract=BusinessContract(success_field="ok", success_values=(True,), message_field="why"))
    server.reply = lambda r: Reply.json({"ok": False, "why": "offline"} if "bad" in r.target else {"ok": True})
    refused = await executor.execute(system, own, {"deviceId": "bad"}, idempotency_key=None)
    assert refused.status == "business_error" and refused.error is not None and refused.error.message == "offline"
    accepted = await executor.execute(system, own, {"deviceId": "good"}, idempotency_key=None)
    assert accepted.status == "ok", accepted  # no `code` field, which the system's contract would require

    server.reply = lambda r: Reply.json({"code": False})  # false is not 0
    strict = await executor.execute(system, read, {"deviceId": "x"}, idempotency_key=None)
    assert strict.status == "business_error" and strict.error is not None
    assert strict.error.message == "`code` is false (success is 0)"

    server.reply = lambda r: Reply.json({"data": 1})
    missing = await executor.execute(system, read, {"deviceId": "x"}, idempotency_key=None)
    assert missing.status == "business_error" and missing.error is not None
    assert missing.error.code == "contract_violation"


async def test_a_write_that_times_out_after_sending_is_outcome_unknown(server: RecordingServer,
                                                                       client: httpx.AsyncClient) -> None:
    server.reply = lambda r: Reply.json({"saved": True}, delay=2.0)
    outcome = await HttpExecutor(client).call(system_for(server.url, idempotency_header="Idempotency-Key"),
                                              tool(path="/rules"), {}, idempotency_key="task-9:step-1", timeout=0.3)
    result = outcome.result
    assert result.status == "outcome_unknown"
    assert result.error is not None and result.error.code == "timeout"
    assert "may or may not have taken effect" in result.error.message
    assert outcome.sent and outcome.transport_failure
    assert 250 <= result.duration_ms < 1500
    await asyncio.sleep(0.3)
    assert len(server.requests) == 1  # the server got it, and it was not sent again
    assert server.requests[0].header("Idempotency-Key") == "task-9:step-1"


def drops_the_first_under_each_key() -> Responder:
    """A system that deduplicates on its key, whose connection closes before its first answer: the
    first request under a key (or any without one) is read and its connection closed unanswered;
    under a key it has seen, it answers with what it did then."""
    seen: set[str] = set()

    def reply(request: Recorded) -> Reply:
        key = request.header("Idempotency-Key")
        if key is None or key not in seen:
            seen.update([key] if key else [])
            return Reply(drop=True)
        return Reply.json({"saved": True, "times_done": 1})
    return reply


@pytest.mark.parametrize("declared", [True, False], ids=["deduplicating", "not-deduplicating"])
async def test_a_keyed_write_whose_connection_was_lost_after_sending_is_sent_again_once(
        server: RecordingServer, client: httpx.AsyncClient, declared: bool) -> None:
    server.reply = drops_the_first_under_each_key()
    system = system_for(server.url, idempotency_header="Idempotency-Key") if declared else system_for(server.url)
    outcome = await HttpExecutor(client).call(system, tool(path="/rules"), {}, idempotency_key="task-9:step-2")
    if declared:
        assert outcome.result.status == "ok", outcome.result
        assert outcome.result.structured == {"saved": True, "times_done": 1}
        assert [r.header("Idempotency-Key") for r in server.requests] == ["task-9:step-2", "task-9:step-2"]
        assert not outcome.transport_failure and outcome.result.sent_again == 1
    else:  # no key went with it: nothing tells the system it is the same write, so it is not sent again
        assert outcome.result.status == "outcome_unknown", outcome.result
        assert outcome.result.error is not None and outcome.result.error.code == "connection_lost"
        assert len(server.requests) == 1 and outcome.transport_failure and outcome.result.sent_again == 0


async def test_a_keyed_write_lost_twice_is_outcome_unknown_saying_it_was_sent_again(
        server: RecordingServer, client: httpx.AsyncClient) -> None:
    server.reply = lambda r: Reply(drop=True)
    outcome = await HttpExecutor(client).call(system_for(server.url, idempotency_header="Idempotency-Key"),
                                              tool(path="/rules"), {}, idempotency_key="task-9:step-3")
    assert outcome.result.status == "outcome_unknown"
    assert outcome.result.error is not None and outcome.result.error.code == "connection_lost"
    assert "sent again under its idempotency key, and lost again" in outcome.result.error.message
    assert len(server.requests) == 2 and outcome.result.sent_again == 1  # once more, not more


async def test_a_read_whose_connection_was_lost_is_not_sent_again(server: RecordingServer,
                                                                  client: httpx.AsyncClient) -> None:
    server.reply = lambda r: Reply(drop=True)
    outcome = await HttpExecutor(client).call(system_for(server.url, idempotency_header="Idempotency-Key"),
                                              tool("GET", "/rules", "read"), {}, idempotency_key="k")
    assert outcome.result.status == "unavailable" and len(server.requests) == 1


async def test_a_read_that_times_out_is_timeout(server: RecordingServer, client: httpx.AsyncClient) -> None:
    server.reply = lambda r: Reply.json({}, delay=2.0)
    outcome = await HttpExecutor(client).call(system_for(server.url), tool("GET", "/slow", "read"), {},
                                              idempotency_key=None, timeout=0.3)
    assert outcome.result.status == "timeout"
    assert outcome.result.error is not None and outcome.result.error.code == "timeout"
    assert outcome.transport_failure and outcome.sent


@pytest.mark.parametrize("side_effect", ["read", "write", "dangerous"])
async def test_connection_refused_is_unavailable_and_nothing_was_sent(client: httpx.AsyncClient,
                                                                      side_effect: SideEffect) -> None:
    system = system_for(f"http://127.0.0.1:{free_port()}")
    outcome = await HttpExecutor(client).call(system, tool("POST", "/x", side_effect), {}, idempotency_key="k")
    assert outcome.result.status == "unavailable"
    assert outcome.result.error is not None and outcome.result.error.code == "connect_failed"
    assert "nothing was sent" in outcome.result.error.message
    assert outcome.transport_failure and not outcome.sent


async def test_idempotency_key_on_writes_only(server: RecordingServer, client: httpx.AsyncClient) -> None:
    executor, system = HttpExecutor(client), system_for(server.url, idempotency_header="Idempotency-Key")
    cases: list[tuple[str, SideEffect]] = [
        ("GET", "read"), ("POST", "write"), ("DELETE", "dangerous"), ("PUT", "write")]
    for method, side_effect in cases:
        await executor.execute(system, tool(method, "/x", side_effect), {}, idempotency_key=f"key-{method}")
    await executor.execute(system, tool("POST", "/x", "write"), {}, idempotency_key=None)
    keys = [(r.method, r.header("Idempotency-Key")) for r in server.requests]
    assert keys == [("GET", None), ("POST", "key-POST"), ("DELETE", "key-DELETE"), ("PUT", "key-PUT"),
                    ("POST", None)]


async def test_the_key_goes_only_to_a_system_that_declares_its_header(server: RecordingServer,
                                                                     client: httpx.AsyncClient) -> None:
    executor = HttpExecutor(client)
    await executor.execute(system_for(server.url), tool("POST", "/x"), {}, idempotency_key="undeclared")
    declared = system_for(server.url, idempotency_header="X-Request-Key")
    await executor.execute(declared, tool("POST", "/x"), {}, idempotency_key="declared")
    plain, keyed = server.requests
    assert plain.header("Idempotency-Key") is None and plain.header("X-Request-Key") is None
    assert keyed.header("X-Request-Key") == "declared" and keyed.header("Idempotency-Key") is None


def echo_headers(request: Recorded) -> Reply:
    return Reply.json({"headers": dict(request.headers), "seen": request.header("Authorization")})


async def test_secret_from_env_is_sent_and_never_returned(server: RecordingServer, client: httpx.AsyncClient) -> None:
    server.reply = echo_headers
    system = system_for(server.url, auth=AuthHeader(value_env="PLANT_TOKEN"))
    declared = DeclaredSecrets(env_names=frozenset({"PLANT_TOKEN"}), values={"PLANT_TOKEN": "s3cr3t-env-value"})
    result = await HttpExecutor(client, declared.read).execute(system, tool("GET", "/me", "read"), {},
                                                               idempotency_key=None)
    assert server.requests[0].header("Authorization") == "Bearer s3cr3t-env-value"
    assert result.status == "ok"
    assert "s3cr3t-env-value" not in json.dumps([result.content, result.structured])
    assert result.structured is not None and result.structured["seen"] == "Bearer [redacted]"


async def test_secret_from_file_with_a_custom_header(server: RecordingServer, client: httpx.AsyncClient,
                                                     tmp_path: Path) -> None:
    secret_file = tmp_path / "token"
    secret_file.write_text("file-secret-123\n")
    server.reply = echo_headers
    auth = AuthHeader(header="X-Api-Key", scheme=None, value_file="token")
    executor = HttpExecutor(client, DeclaredSecrets(directory=tmp_path).read)
    result = await executor.execute(system_for(server.url, auth=auth), tool("GET", "/me", "read"), {},
                                    idempotency_key=None)
    assert server.requests[0].header("X-Api-Key") == "file-secret-123"
    assert server.requests[0].header("Authorization") is None
    assert "file-secret-123" not in json.dumps([result.content, result.structured])


async def test_a_missing_secret_is_unavailable_naming_the_variable(server: RecordingServer,
                                                                   client: httpx.AsyncClient,
                                                                   tmp_path: Path) -> None:
    executor = HttpExecutor(client, DeclaredSecrets(tmp_path, frozenset({"PLANT_TOKEN_UNSET"})).read)
    for auth, named in ((AuthHeader(value_env="PLANT_TOKEN_UNSET"), "PLANT_TOKEN_UNSET"),
                        (AuthHeader(value_file="absent"), "absent")):
        outcome = await executor.call(system_for(server.url, auth=auth), tool("POST", "/rules"), {},
                                      idempotency_key=None)
        assert outcome.result.status == "unavailable"
        assert outcome.result.error is not None and outcome.result.error.code == "secret_missing"
        assert named in outcome.result.error.message
        assert not outcome.sent and not outcome.transport_failure
    assert server.requests == []


async def test_missing_or_unexpected_arguments_are_denied_before_sending(server: RecordingServer,
                                                                        client: httpx.AsyncClient) -> None:
    params = (HttpParam(name="deviceId", location="path", required=True), HttpParam(name="metric", location="body"))
    definition = tool(params=params, required=("deviceId", "metric"))
    executor, system = HttpExecutor(client), system_for(server.url)
    result = await executor.execute(system, definition, {"threshold": 3}, idempotency_key=None)
    assert result.status == "denied"
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert "deviceId, metric" in result.error.message and "threshold" in result.error.message
    assert server.requests == []


@pytest.mark.parametrize(("status", "side_effect", "expected", "transport"), [
    (404, "read", "tool_error", False),
    (409, "write", "tool_error", False),
    (500, "read", "tool_error", False),
    (503, "read", "tool_error", True),
    (500, "write", "outcome_unknown", False),
    (504, "dangerous", "outcome_unknown", True),
    (503, "write", "tool_error", True),
])
async def test_http_errors(server: RecordingServer, client: httpx.AsyncClient, status: int,
                           side_effect: SideEffect, expected: str, transport: bool) -> None:
    server.reply = lambda r: Reply.json({"error": "nope"}, status=status)
    outcome = await HttpExecutor(client).call(system_for(server.url), tool("POST", "/x", side_effect), {},
                                              idempotency_key="k")
    assert outcome.result.status == expected
    assert outcome.result.error is not None and outcome.result.error.code == f"http_{status}"
    assert outcome.transport_failure is transport
    assert outcome.result.structured == {"error": "nope"}
    if status >= 500 and expected == "tool_error":
        assert "not a transport failure" in outcome.result.error.message


async def test_a_large_body_is_truncated_in_the_text(server: RecordingServer, client: httpx.AsyncClient) -> None:
    server.reply = lambda r: Reply(200, b"x" * (MAX_TEXT_BYTES * 3), {"Content-Type": "text/plain"})
    result = await HttpExecutor(client).execute(system_for(server.url), tool("GET", "/big", "read"), {},
                                                idempotency_key=None)
    assert result.status == "ok" and result.structured is None
    text = result.content[0]["text"]
    assert text.startswith("x" * MAX_TEXT_BYTES) and text.endswith(f"[truncated; {MAX_TEXT_BYTES * 3} bytes]")


async def test_an_empty_204_is_ok_without_content(server: RecordingServer, client: httpx.AsyncClient) -> None:
    server.reply = lambda r: Reply(204)
    result = await HttpExecutor(client).execute(system_for(server.url), tool("DELETE", "/x", "dangerous"), {},
                                                idempotency_key="k")
    assert result.status == "ok" and result.content == [] and result.side_effect == "dangerous"


async def test_arguments_cannot_replace_the_credential_or_the_key(server: RecordingServer,
                                                                  client: httpx.AsyncClient) -> None:
    params = (HttpParam(name="auth", location="header", wire_name="authorization"),
              HttpParam(name="key", location="header", wire_name="idempotency-key"))
    system = system_for(server.url, auth=AuthHeader(value_env="PLANT_TOKEN"), idempotency_header="Idempotency-Key")
    declared = DeclaredSecrets(env_names=frozenset({"PLANT_TOKEN"}), values={"PLANT_TOKEN": "the-real-one"})
    executor = HttpExecutor(client, declared.read)
    await executor.execute(system, tool("POST", "/x", params=params),
                           {"auth": "Bearer forged", "key": "forged"}, idempotency_key="task-1:step-1")
    [got] = server.requests
    assert [v for k, v in got.headers if k.lower() == "authorization"] == ["Bearer the-real-one"]
    assert [v for k, v in got.headers if k.lower() == "idempotency-key"] == ["task-1:step-1"]
