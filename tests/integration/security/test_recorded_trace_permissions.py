"""A routed event's trace, kept in its run record (services/router/recorded_traces.py), is read back
under the router's own identity on a real nats-server with deploy/nats-auth.conf: exactly by its run
id, and by reading the records stream for an id it does not hold, with the one right it was given
for that (`STREAM.MSG.GET.KV_AMP_RUN_RECORDS`); an operator sees the answer through the CLI.
Who else may read the records is a row of the attack matrix (`records_read`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.contracts.agent import Agent
from shared.contracts.binding import Binding
from shared.contracts.resource import canonical_json, parse_resource
from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import agents_bucket, bindings_bucket, ensure_bucket
from shared.nats.admin_service import admin_request
from tests.harness.cli_here import run_cli_here
from tests.harness.secure_nats import SecureNats, open_session, secure_nats
from tests.harness.stack import StackBuilder
from tests.harness.waiting import poll
from tests.unit.router.factories import event_doc

SUBJECTS = Subjects("amp")


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[SecureNats]:
    with secure_nats(tmp_path) as server:
        router = StackBuilder(tmp_path).broker(server.url, server.credentials).router(
            AURORA_APPS_CONFIG=str(tmp_path / "no-apps.yml"))
        with router.running():
            yield server


async def _saved(secure: SecureNats) -> None:
    """The agent as the gateway saves it, the binding as the router does (each its bucket's writer)."""
    gateway = await open_session(secure.url, "mcp-gateway", secure.password("mcp-gateway"))
    router = await open_session(secure.url, "router", secure.password("router"))
    try:
        agents = await ensure_bucket(gateway.nc.jetstream(), agents_bucket(SUBJECTS))
        agent = parse_resource(Agent, {"id": "chat", "agent_kind": "llm", "events": ["*"]})
        await agents.put("chat", canonical_json(agent))
        bindings = await ensure_bucket(router.nc.jetstream(), bindings_bucket(SUBJECTS))
        await bindings.put("chat", canonical_json(parse_resource(Binding, {
            "id": "chat", "event_pattern": "message.*", "target_type": "agent", "target_id": "chat"})))
    finally:
        await gateway.nc.close()
        await router.nc.close()


def _trace(secure: SecureNats, message_id: str) -> tuple[int, str]:
    env = {"NATS_URL": secure.url, "NATS_USER": "operator", "NATS_PASSWORD": secure.password("operator")}
    done = run_cli_here(("route", "trace", message_id, "--json"), env)
    return done.returncode, done.stdout + done.stderr


async def test_an_operator_reads_a_routed_events_trace_from_its_record_under_the_real_permissions(
        secure: SecureNats) -> None:
    await _saved(secure)
    operator = await open_session(secure.url, "operator", secure.password("operator"))
    try:
        async def current() -> bool:  # the router's copies hold the agent and the binding
            revisions = (await admin_request(operator.nc, SUBJECTS, "router", "health"))["revisions"]
            return bool(revisions["bindings"] >= 1 and revisions["agents"] >= 1)

        await poll(current, what="the router's copies")
    finally:
        await operator.nc.close()
    doc = event_doc("message.received", data={"text": "hi"})
    message_id = doc["header"]["message_id"]
    bridge = await open_session(secure.url, "event-bridge", secure.password("event-bridge"))
    try:
        await bridge.nc.jetstream().publish(SUBJECTS.event("im.polaris.qq", "message.received"),
                                            json.dumps(doc).encode(), headers={"Nats-Msg-Id": message_id})
    finally:
        await bridge.nc.close()

    async def traced() -> dict[str, object] | None:
        code, out = await asyncio.to_thread(_trace, secure, message_id)
        return dict(json.loads(out)) if code == 0 else None

    found = await poll(traced, timeout=30, what="the event's trace")
    assert found["status"] == "dispatched", found
    assert (found["binding_id"], found["run_id"]) == ("chat", run_id_for(message_id, "chat")), found

    code, out = await asyncio.to_thread(_trace, secure, "no-such-event")  # read for in the records too
    assert code == 1 and "nor among the newest 20,000 run records" in out, out
    assert not [line for line in secure.violations() if "router" in line], secure.violations()
