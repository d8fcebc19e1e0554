"""The tool-pool commands' formatting and argument checks (no NATS: every check here fails or
formats before anything is sent)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from typer.testing import CliRunner

from aurora_cli.commands.agents import available_rows, excluded_rows, parse_delivery
from aurora_cli.commands.approvals import STATES, approval_lines, approval_rows
from aurora_cli.commands.audit import audit_json, audit_line, audit_subject
from aurora_cli.commands.systems import import_lines, import_request, status_rows
from aurora_cli.commands.tools import definition_lines, refusal_reasons, type_of
from aurora_cli.localnats import free_port
from aurora_cli.main import app
from aurora_cli.output import CliError
from shared.config.settings import load_settings
from shared.contracts.approval import Approval
from shared.contracts.audit import AuditRecord
from shared.contracts.tooldef import HttpExecution, HttpParam, McpExecution, ReviewNote, ToolDefinition

runner = CliRunner()


def _invoke(*args: str) -> Any:
    """Run the CLI in-process against a port where nothing listens."""
    return runner.invoke(app, list(args), env={"NATS_URL": f"nats://127.0.0.1:{free_port()}"})


# --------------------------------------------------------------------------- tools


def test_refusal_reasons_are_split_one_per_line() -> None:
    message = ("cannot publish acme.x: input_schema is not a valid JSON Schema: 'n' is bad; "
               "description is empty: the model needs to know what the tool does")
    assert refusal_reasons(message, "publish", "acme.x") == [
        "input_schema is not a valid JSON Schema: 'n' is bad",
        "description is empty: the model needs to know what the tool does",
    ]
    assert refusal_reasons("something else", "publish", "acme.x") == ["something else"]


def _mcp_tool() -> dict[str, Any]:
    return ToolDefinition(
        name="im.polaris.qq.send_message", system="im.polaris.qq", description="Send a message.\nTo a chat.",
        input_schema={"type": "object", "required": ["session_id", "text"], "properties": {
            "session_id": {"type": "string", "description": "the chat"}, "text": {"type": "string"},
            "reply_to": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
        execution=McpExecution(app="im.polaris.qq", tool="send_message"), side_effect="write", state="PUBLISHED",
        source="mcp", changed_by="mcp-gateway", changed_at="2026-06-19T12:00:00+08:00",
        notes=(ReviewNote(at="2026-06-19T12:00:00+08:00", by="mcp-gateway", action="discovered", note="from chat"),),
    ).model_dump(mode="json")


def _http_tool() -> dict[str, Any]:
    return ToolDefinition(
        name="petstore.getPetById", system="petstore", description="",
        input_schema={"type": "object", "required": ["petId"], "properties": {
            "petId": {"type": "integer"}, "X-Trace": {"type": "string"}, "tags": {"type": "array",
                                                                                 "items": {"type": "string"}}}},
        execution=HttpExecution(method="GET", path="/pet/{petId}", operation_id="getPetById", params=(
            HttpParam(name="petId", location="path", required=True),
            HttpParam(name="X-Trace", location="header", wire_name="X-Trace-Id"))),
        side_effect="read", missing=("response 200: fields without a description: id",), source="openapi",
    ).model_dump(mode="json")


def test_definition_lines_of_an_mcp_tool() -> None:
    lines = definition_lines(_mcp_tool())
    assert lines[:5] == [
        "name:         im.polaris.qq.send_message",
        "state:        PUBLISHED (version 1)",
        "system:       im.polaris.qq (source mcp)",
        "side effect:  write",
        "description:  Send a message. To a chat.",
    ]
    assert "execution:    mcp tool 'send_message' of app im.polaris.qq (default)" in lines
    assert "  session_id: string (required) — the chat" in lines
    assert "  reply_to: string|null" in lines
    assert "missing:      (nothing)" in lines
    assert "  2026-06-19T12:00:00+08:00  mcp-gateway  discovered: from chat" in lines


def test_definition_lines_of_an_http_tool_show_its_mapping_and_what_is_missing() -> None:
    lines = definition_lines(_http_tool())
    assert "description:  (empty)" in lines
    assert "execution:    http GET /pet/{petId}  (operation getPetById)" in lines
    assert "  petId → path, required" in lines
    assert "  X-Trace → header as 'X-Trace-Id'" in lines
    assert "  tags: array of string" in lines
    index = lines.index("missing:")
    assert lines[index + 1] == "  - response 200: fields without a description: id"


@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "integer"}, "integer"),
    ({"type": ["string", "null"]}, "string|null"),
    ({"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}, "array of Pet"),
    ({"oneOf": [{"type": "integer"}, {"type": "integer"}]}, "integer"),
    ({"enum": ["a", "b"]}, "enum"),
    ({}, "any"),
    ("not a schema", "any"),
])
def test_type_of(schema: Any, expected: str) -> None:
    assert type_of(schema) == expected


def test_mark_needs_something_to_mark() -> None:
    result = _invoke("tools", "mark", "acme.x")
    assert result.exit_code == 2
    assert "give --capability, --preferred/--not-preferred and/or --side-effect" in result.output


@pytest.mark.parametrize("command", ["show", "review", "publish", "deprecate", "draft"])
def test_lifecycle_commands_fail_in_one_line_without_nats(command: str) -> None:
    result = _invoke("tools", command, "acme.x")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot connect to NATS at nats://127.0.0.1:")


# --------------------------------------------------------------------------- systems


def test_status_rows() -> None:
    now = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    rows = status_rows([
        {"name": "im.polaris.qq", "type": "mcp", "enabled": True, "health": "connected", "tools": 8,
         "last_error": None},
        {"name": "petstore", "type": "http", "enabled": False, "health": "down", "circuit": "open",
         "probe": None, "last_error": "ConnectError:\n  refused " + "x" * 100},
        {"name": "assets", "type": "http", "enabled": True, "health": "up", "circuit": "closed",
         "probe": "GET /healthz every 15s", "last_probe": "2026-12-04T11:59:48+00:00"},
        {"name": "crm", "type": "http", "enabled": True, "health": "unknown", "circuit": "closed",
         "probe": "GET / every 15s", "last_probe": None},
    ], now)
    assert rows[0] == ["im.polaris.qq", "mcp", "yes", "connected", "-", "-", 8, None]
    assert rows[1][:7] == ["petstore", "http", "NO", "down", "open", "off", None]
    assert "\n" not in rows[1][7] and len(rows[1][7]) == 80 and rows[1][7].endswith("…")
    assert rows[2][:6] == ["assets", "http", "yes", "up", "closed", "12s ago"]
    assert rows[3][5] == "not yet"


def test_import_request_sends_a_local_spec_with_its_absolute_path(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text("openapi: 3.0.3\n")
    body = import_request("petstore", "https://api.example.com/v3", "api.yaml", "pets", cwd=tmp_path)
    assert body["spec"] == str(tmp_path / "api.yaml")
    assert body["document"] == "openapi: 3.0.3\n"  # the gateway does not read the CLI's files
    assert {k: body[k] for k in ("name", "base_url", "package")} == {
        "name": "petstore", "base_url": "https://api.example.com/v3", "package": "pets"}
    assert body["by"]


def test_import_request_passes_a_url_through_and_omits_no_package() -> None:
    body = import_request("petstore", "http://x", "https://example.com/openapi.json", None)
    assert body["spec"] == "https://example.com/openapi.json" and "package" not in body and "probe" not in body


def test_import_request_carries_a_probe_path() -> None:
    body = import_request("petstore", "http://x", "https://s", None, probe="/healthz")
    assert body["probe"] == {"path": "/healthz"}
    with pytest.raises(CliError, match="--probe 'healthz': a path below the base URL"):
        import_request("petstore", "http://x", "https://s", None, probe="healthz")


def test_import_request_leaves_a_file_on_the_gateway_for_the_gateway_to_read(tmp_path: Path) -> None:
    body = import_request("petstore", "http://x", "team/api.yaml", None, cwd=tmp_path, on_gateway=True)
    assert body["spec"] == "team/api.yaml" and "document" not in body


def test_import_request_refuses_a_spec_too_large_to_send_or_not_text(tmp_path: Path) -> None:
    (tmp_path / "big.json").write_bytes(b"{" + b" " * (7 * 1024 * 1024) + b"}")
    with pytest.raises(CliError, match="larger than 7340032 bytes, too large to send") as raised:
        import_request("petstore", "http://x", "big.json", None, cwd=tmp_path)
    assert raised.value.exit_code == 2
    (tmp_path / "latin1.yaml").write_bytes("title: caf\xe9\n".encode("latin-1"))
    with pytest.raises(CliError, match="not UTF-8 text"):
        import_request("petstore", "http://x", "latin1.yaml", None, cwd=tmp_path)


@pytest.mark.parametrize(("args", "message"), [
    (("bad name!", "http://x", "https://s"), "NAME 'bad name!'"),
    (("petstore", "api.example.com", "https://s"), "--base-url 'api.example.com' must be an http:// or https:// URL"),
    (("petstore", "http://x", "no/such/file.json"), "--spec no/such/file.json: no such file"),
])
def test_import_request_refuses_bad_arguments(args: tuple[str, str, str], message: str) -> None:
    with pytest.raises(CliError) as raised:
        import_request(*args, None)
    assert message in str(raised.value) and raised.value.exit_code == 2


def test_import_request_refuses_a_bad_package() -> None:
    with pytest.raises(CliError, match="--package"):
        import_request("petstore", "http://x", "https://s", "no spaces")


def test_import_openapi_checks_arguments_before_connecting() -> None:
    result = _invoke("systems", "import-openapi", "petstore", "--base-url", "http://x", "--spec", "missing.json")
    assert result.exit_code == 2 and "--spec missing.json: no such file" in result.output
    usage = _invoke("systems", "import-openapi", "petstore")
    assert usage.exit_code == 2  # --base-url and --spec are required


def test_import_lines() -> None:
    lines = import_lines({
        "system": "petstore", "title": "Petstore", "created": ["petstore.addPet"], "updated": ["petstore.getPet"],
        "unchanged": [], "left": [{"tool": "petstore.upload", "reason": "published: left as it is"}],
        "missing": {"petstore.addPet": ["input `id` (body): no description", "response 200: no schema"]},
        "renamed": [{"operation": "GET /pets", "wanted": "petstore.pets", "name": "petstore.pets_2",
                     "reason": "taken"}],
        "skipped": ["TRACE /x: unsupported method"],
    })
    assert lines[0] == ("system petstore (Petstore): 1 created, 1 updated, 0 unchanged, 1 left out "
                        "(drafts: review, then publish)")
    assert "  created   petstore.addPet  (2 missing)" in lines
    assert "  updated   petstore.getPet" in lines
    assert lines[lines.index("left out:") + 1] == "  petstore.upload: published: left as it is"
    assert "  GET /pets: petstore.pets → petstore.pets_2 (taken)" in lines
    assert "  TRACE /x: unsupported method" in lines
    assert lines[-2:] == ["  petstore.addPet: input `id` (body): no description",
                          "  petstore.addPet: response 200: no schema"]


def test_systems_without_nats_is_a_one_line_error() -> None:
    result = _invoke("systems", "--json")
    assert result.exit_code == 1 and result.output.startswith("error: cannot connect to NATS")


# --------------------------------------------------------------------------- agents


def test_parse_delivery() -> None:
    assert parse_delivery(None) is None
    assert parse_delivery('{"reply_target": {"app": "a"}}') == {"reply_target": {"app": "a"}}
    for bad in ("[1]", "{nope"):
        with pytest.raises(CliError) as raised:
            parse_delivery(bad)
        assert raised.value.exit_code == 2 and "--delivery" in str(raised.value)


def test_agent_tool_rows() -> None:
    reply = {"available": [{"name": "a.b", "side_effect": "read", "llm_name": "a__b"}],
             "excluded": [{"tool": "c.d", "reason": "system_disabled", "detail": "system 'c' is disabled"}]}
    assert available_rows(reply) == [["a.b", "read", "a__b"]]
    assert excluded_rows(reply) == [["c.d", "system_disabled", "system 'c' is disabled"]]


def test_agents_tools_refuses_bad_delivery_before_connecting() -> None:
    result = _invoke("agents", "tools", "helper", "--delivery", "[]")
    assert result.exit_code == 2 and "--delivery must be a JSON object" in result.output


# --------------------------------------------------------------------------- approvals


def _approval(**changes: Any) -> dict[str, Any]:
    approval = Approval(id="apr-1", tool="im.polaris.qq.send_message", args_hash="h", task_id="t1",
                        agent="helper", arguments={"text": "你好"}, requested_at="2026-06-19T12:00:00.5+08:00",
                        expires_at="2026-06-20T12:00:00+08:00", session_id="group_1")
    return dict(msgspec.to_builtins(msgspec.structs.replace(approval, **changes)))


def test_approval_rows_and_lines() -> None:
    pending = _approval()
    assert approval_rows([pending]) == [["apr-1", "pending", "im.polaris.qq.send_message", "write", "helper", "t1",
                                         "2026-06-19 12:00:00", "2026-06-20 12:00:00", "-", None]]
    shown = {**pending, "may_decide": {"roles": ["approver"], "users": ["amy"], "policies": ["p1"]},
             "grants": [{"by": "amy", "at": "2026-06-19T12:01:00+08:00"}], "required_grants": 2}
    assert approval_rows([shown])[0][-2:] == ["role approver, amy", "amy"]
    assert "grants:      1 of 2: amy at 2026-06-19 12:01:00" in approval_lines(shown)
    assert any(line.startswith("may decide:  roles approver; users amy (policy p1") for line in approval_lines(shown))
    lines = approval_lines(_approval(state="consumed", decided_by="ada", decided_at="2026-06-19T12:01:00+08:00",
                                     note="ok", consumed_at="2026-06-19T12:02:00+08:00"))
    assert 'arguments:   {"text":"你好"}' in lines
    assert "decided:     2026-06-19T12:01:00+08:00 by ada: ok" in lines
    assert "used:        2026-06-19T12:02:00+08:00" in lines
    assert not any(line.startswith("decided") for line in approval_lines(pending))


def test_approvals_list_refuses_an_unknown_state() -> None:
    result = _invoke("approvals", "list", "--state", "approved")
    assert result.exit_code == 2
    assert f"--state 'approved': use one of {', '.join(STATES)}" in result.output
    assert STATES == ("pending", "granted", "denied", "consumed", "expired")


# --------------------------------------------------------------------------- audit


def _record(**changes: Any) -> bytes:
    record = AuditRecord(call_id="c1", at="2026-06-19T12:00:01.234+08:00", tool="im.polaris.qq.send_message",
                         system="im.polaris.qq", caller="agent:helper", agent="helper", task_id="t1",
                         status="needs_approval", duration_ms=3.14159, approval_id="apr-1",
                         input_summary='{"text":"你好"}')
    return msgspec.json.encode(msgspec.structs.replace(record, **changes))


def test_audit_line() -> None:
    assert audit_line(_record()) == ("12:00:01.234  agent:helper  im.polaris.qq.send_message  needs_approval  3.1ms"
                                     '  approval=apr-1  task=t1  in={"text":"你好"}')
    denied = audit_line(_record(status="denied", error_code="approval_used", error_message="approval apr-1\nused",
                                synthetic=True, approval_id=None, task_id=None, input_summary=""))
    assert denied == ("12:00:01.234  agent:helper  im.polaris.qq.send_message  denied  3.1ms  [synthetic]"
                      "  error=approval_used: approval apr-1 used")
    assert audit_line(b"garbage").startswith("-  (not an audit record)  garbage")
    resent = audit_line(_record(status="ok", sent_again=1, approval_id=None, task_id=None, input_summary=""))
    assert resent == "12:00:01.234  agent:helper  im.polaris.qq.send_message  ok  3.1ms  [sent again x1]"


def test_audit_json_keeps_the_record_exactly() -> None:
    assert audit_json(_record())["duration_ms"] == 3.14159
    assert audit_json(b"x") == {"error": "not JSON", "raw": "x"}


def test_audit_subject() -> None:
    settings = load_settings({})
    assert audit_subject(settings, None) == "amp.audit.>"
    assert audit_subject(settings, "im.polaris.qq") == "amp.audit.im_polaris_qq"
    with pytest.raises(CliError) as raised:
        audit_subject(settings, "bad app")
    assert raised.value.exit_code == 2


def test_every_pool_command_takes_json() -> None:
    for args in (["systems"], ["systems", "import-openapi"], ["systems", "enable"], ["systems", "disable"],
                 ["tools", "show"], ["tools", "publish"], ["agents", "tools"], ["approvals", "list"],
                 ["approvals", "grant"], ["approvals", "deny"], ["approvals", "show"], ["audit", "tail"]):
        result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0 and "--json" in result.output, (args, result.output)



def test_import_request_carries_the_header_a_system_deduplicates_writes_on() -> None:
    body = import_request("shop", "http://x", "https://s", None, idempotency_header="X-Request-Id")
    assert body["idempotency_header"] == "X-Request-Id"
    assert "idempotency_header" not in import_request("shop", "http://x", "https://s", None)
    with pytest.raises(CliError, match="--idempotency-header 'X Request': a header name"):
        import_request("shop", "http://x", "https://s", None, idempotency_header="X Request")
