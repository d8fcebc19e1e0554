"""A2A on a secured nats-server (deploy/nats-auth.conf): mcp-edge, as its own NATS user, publishes
the message as its platform signal, finds and follows the task and cancels it through the runners,
with no permission violation."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, TaskState

from shared.nats.admin_service import admin_request
from tests.harness.secure_stack import SecureStack, secure_stack
from tests.integration.mcp_edge.a2a.helpers import SUBJECTS, a2a_client, answer_of, reader, sent, writer


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureStack]:
    with secure_stack(tmp_path_factory.mktemp("a2a-secure")) as stack:
        yield stack


def edge_url(stack: SecureStack) -> str:
    """The edge serves on any free port: its log line says which."""
    for line in stack.processes["mcp_edge"].logs().splitlines():
        if '"serving"' in line:
            return f"http://127.0.0.1:{json.loads(line)['port']}"
    raise AssertionError("mcp-edge has not said where it serves")


async def test_a_read_and_a_cancel_as_the_edges_own_nats_user(stack: SecureStack) -> None:
    operator = await stack.session("operator")
    try:
        secrets: dict[str, str] = {}
        for document in (reader("a2a-sec-read"), writer("a2a-sec-write")):
            agent_id = document["id"]
            await admin_request(operator.nc, SUBJECTS, "agents", "apply", {"document": document}, timeout=20)
            binding = {"kind": "Binding", "id": f"a2a-{agent_id}", "event_pattern": "a2a.message.received",
                       "filters": [{"field": "data.agent", "op": "eq", "value": agent_id}],
                       "target_type": "agent", "target_id": agent_id}
            await admin_request(operator.nc, SUBJECTS, "bindings", "apply", {"document": binding}, timeout=20)
            created = await admin_request(operator.nc, SUBJECTS, "tokens", "create", {"agent": agent_id}, timeout=10)
            secrets[agent_id] = created["token"]
    finally:
        await operator.nc.close()
    base = edge_url(stack)
    async with a2a_client(base, "a2a-sec-read", secrets["a2a-sec-read"]) as client:
        done = await sent(client, "secured")
    assert done.status.state == TaskState.TASK_STATE_COMPLETED and answer_of(done) == "echoed secured", done
    async with a2a_client(base, "a2a-sec-write", secrets["a2a-sec-write"]) as client:
        waiting = await sent(client, "a2a-sec-write")
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, waiting
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED, cancelled
        assert (await client.get_task(GetTaskRequest(id=waiting.id))).status.state == TaskState.TASK_STATE_CANCELED
    edge = [v for v in stack.nats.violations() if re.search(r"user:mcp-edge\b", v)]
    assert not edge, edge
