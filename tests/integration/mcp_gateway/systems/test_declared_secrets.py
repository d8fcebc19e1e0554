"""Attack: an operator applies a System whose `base_url` is their own listener and whose `auth`
names a variable or file of the gateway's that nobody gave to systems, to be sent the value.

A real gateway process (its environment holds the variable), a real nats-server, a real HTTP
listener. The system is refused at apply naming the field; one stored before the rule is refused
at call time, the listener receives nothing and the refusal is on the audit; declared secrets (a
file in the secrets folder, an allow-listed variable) reach their system.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from nats.aio.client import Client as NATS

from services.mcp_gateway.pool.registry import ToolPool
from shared.contracts.subjects import Subjects
from shared.contracts.system import AuthHeader, System
from shared.contracts.tooldef import HttpExecution, ToolDefinition
from shared.jetstream.streams import audit_stream
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.harness.cli_here import run_cli_here
from tests.harness.processes import ServiceProcess
from tests.harness.waiting import poll
from tests.integration.mcp_gateway.systems.recording_server import Recorded, RecordingServer, Reply

UNDECLARED = "undeclared-gateway-secret-4711"
DECLARED_ENV = "declared-env-secret-0815"
DECLARED_FILE = "declared-file-secret-2323"


def seen(request: Recorded) -> Reply:
    return Reply.json({"ok": True})


def envelope(tool: str) -> bytes:
    return json.dumps({
        "header": {"protocol": "amp/1.0", "method": "tools/call", "message_id": str(uuid.uuid4()),
                   "timestamp": "2026-06-19T12:00:00+08:00", "source": {"app": "tests"}},
        "payload": {"tool": tool, "arguments": {}, "context": {}, "timeout_seconds": 5},
    }).encode()


async def operator_call(nc: NATS, subjects: Subjects, tool: str) -> dict[str, Any]:
    reply = await nc.request(subjects.operator_tool_call, envelope(tool), timeout=15)
    payload: dict[str, Any] = json.loads(reply.data)["payload"]
    return payload


def http_system(name: str, url: str, **auth: str) -> dict[str, Any]:
    return {"kind": "System", "name": name, "type": "http", "base_url": url,
            "auth": {"header": "Authorization", "scheme": "Bearer", **auth}}


@pytest.fixture
def gateway(tmp_path: Path, spawn: Callable[..., ServiceProcess]) -> tuple[ServiceProcess, Path]:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "crm_token").write_text(DECLARED_FILE + "\n", encoding="utf-8")
    (tmp_path / "outside_token").write_text(UNDECLARED, encoding="utf-8")
    apps = tmp_path / "apps.yml"
    apps.write_text("apps: {}\n", encoding="utf-8")
    process = spawn("services.mcp_gateway", AURORA_APPS_CONFIG=str(apps), AURORA_SECRETS_DIR=str(secrets),
                    AURORA_GATEWAY_SECRET_ENV="CRM_DECLARED_TOKEN", CRM_DECLARED_TOKEN=DECLARED_ENV,
                    SOME_UNDECLARED_VAR=UNDECLARED)
    return process, tmp_path


async def published(nc: NATS, subjects: Subjects, system: str) -> str:
    pool = ToolPool(nc.jetstream(), subjects)
    await pool.start()
    name = f"{system}.whoami"
    try:
        await pool.put_tool(ToolDefinition(name=name, system=system, side_effect="read", state="PUBLISHED",
                                           execution=HttpExecution(method="GET", path="/me")))
    finally:
        await pool.stop()
    return name


async def answered(nc: NATS, subjects: Subjects, tool: str) -> dict[str, Any]:
    """The call's reply once the gateway knows the tool (its pool follows the bucket)."""
    async def known() -> dict[str, Any] | None:
        reply = await operator_call(nc, subjects, tool)
        error = reply.get("error") or {}
        return None if error.get("code") in ("unknown_tool", "system_not_found") else reply
    return await poll(known, timeout=20, what=f"the gateway to know {tool}")


async def audited(nc: NATS, subjects: Subjects, tool: str) -> dict[str, Any]:
    """The audit record of the call of `tool` the gateway refused for its secret, once it is stored."""
    js, stream = nc.jetstream(), audit_stream(subjects).name

    async def stored() -> dict[str, Any] | None:
        info = await js.stream_info(stream)
        for seq in range(max(info.state.first_seq, 1), info.state.last_seq + 1):  # none yet: 0, 0
            record = json.loads((await js.get_msg(stream, seq)).data or b"{}")
            if record.get("tool") == tool and record.get("error_code") == "secret_not_declared":
                return dict(record)
        return None

    return await poll(stored, timeout=15, what=f"the audit record of the refused call of {tool}")


async def test_undeclared_secrets_are_refused_at_apply_naming_the_field(
        nc: NATS, nats_url: str, subjects: Subjects, gateway: tuple[ServiceProcess, Path]) -> None:
    process, folder = gateway
    await process.ready()
    listener = RecordingServer().start()
    try:
        for auth, field in (({"value_env": "SOME_UNDECLARED_VAR"}, "auth.value_env"),
                            ({"value_file": str(folder / "outside_token")}, "auth.value_file"),
                            ({"value_file": "../outside_token"}, "auth.value_file")):
            with pytest.raises(AdminRequestError) as refused:
                await admin_request(nc, subjects, "systems", "apply",
                                    {"document": http_system("exfil", listener.url, **auth)})
            message = str(refused.value)
            assert refused.value.code == "secret_not_declared", message
            assert field in message and "system exfil" in message
            assert "CRM_DECLARED_TOKEN" in message and "crm_token" in message  # what is declared
            assert UNDECLARED not in message
        document = folder / "exfil.yml"  # `aurora apply` of the same document, as an operator would
        document.write_text(yaml.safe_dump(http_system("exfil", listener.url, value_env="SOME_UNDECLARED_VAR")))
        applied = run_cli_here(["apply", "-f", str(document)], {"NATS_URL": nats_url})
        assert applied.returncode != 0, applied.stdout
        said = applied.stdout + applied.stderr
        assert "auth.value_env" in said and "SOME_UNDECLARED_VAR" in said and UNDECLARED not in said
        with pytest.raises(AdminRequestError) as absent:
            await admin_request(nc, subjects, "systems", "get", {"id": "exfil"})
        assert absent.value.code == "not_found"  # nothing was stored
    finally:
        listener.stop()


async def test_a_system_stored_before_the_rule_is_refused_at_call_time_and_nothing_is_sent(
        nc: NATS, subjects: Subjects, gateway: tuple[ServiceProcess, Path]) -> None:
    process, folder = gateway
    await process.ready()
    listener = RecordingServer().start()
    listener.reply = seen
    try:
        for name, auth, field in (("old-env", AuthHeader(value_env="SOME_UNDECLARED_VAR"), "auth.value_env"),
                                  ("old-file", AuthHeader(value_file=str(folder / "outside_token")),
                                   "auth.value_file")):
            pool = ToolPool(nc.jetstream(), subjects)  # as a system written before the gateway checked
            await pool.start()
            await pool.put_system(System(name=name, base_url=listener.url, auth=auth))
            await pool.stop()
            tool = await published(nc, subjects, name)
            reply = await answered(nc, subjects, tool)
            assert reply["status"] == "denied", reply
            assert reply["error"]["code"] == "secret_not_declared", reply
            assert field in reply["error"]["message"] and UNDECLARED not in json.dumps(reply)
            record = await audited(nc, subjects, tool)  # the refusal is on the audit, with who asked
            assert record["status"] == "denied" and record["caller"] == "operator", record
            assert field in record["error_message"] and record["executed"] is False, record
            assert UNDECLARED not in json.dumps(record)
        assert listener.requests == []  # the replies came: nothing was sent, no Authorization header
    finally:
        listener.stop()


async def test_declared_secrets_reach_their_system(nc: NATS, subjects: Subjects,
                                                   gateway: tuple[ServiceProcess, Path]) -> None:
    process, _ = gateway
    await process.ready()
    listener = RecordingServer().start()
    listener.reply = seen
    try:
        for name, auth in (("crm-env", {"value_env": "CRM_DECLARED_TOKEN"}), ("crm-file", {"value_file": "crm_token"})):
            applied = await admin_request(nc, subjects, "systems", "apply",
                                          {"document": http_system(name, listener.url, **auth)})
            assert applied["result"] == "created", applied
            reply = await answered(nc, subjects, await published(nc, subjects, name))
            assert reply["status"] == "ok", reply
        assert [r.header("Authorization") for r in listener.requests] == [
            f"Bearer {DECLARED_ENV}", f"Bearer {DECLARED_FILE}"]
    finally:
        listener.stop()
