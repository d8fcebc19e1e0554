"""With tracing on, an external client's call is one trace through Aurora: the `traceparent` in
the call's `_meta` is the parent of the edge's span for the request, and that span the parent
of the gateway's span for the call (spans read back from the services' real OTLP exporters)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.apps_config import echo_app
from tests.harness.otlp import OtlpReceiver, ReceivedSpan
from tests.harness.stack import Stack, StackBuilder
from tests.harness.waiting import poll
from tests.integration.mcp_edge.helpers import ECHO_TOOL, MODERN, agent, connected, token

TRACE_ID = "5bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "10f067aa0ba902b7"


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    running = OtlpReceiver().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def traced_stack(tmp_path_factory: pytest.TempPathFactory, receiver: OtlpReceiver) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("traced-edge")
    builder = StackBuilder(folder).apps({"echo": echo_app()}).supervisor().gateway(**receiver.env()).edges(
        1, **receiver.env())
    with builder.running() as stack:
        yield stack


async def test_the_clients_trace_runs_through_the_edge_to_the_gateway(traced_stack: Stack,
                                                                       receiver: OtlpReceiver) -> None:
    async with traced_stack.client() as nc:
        await agent(nc, "edge-traced", [ECHO_TOOL])
        created = await token(nc, "edge-traced")
    meta: Any = {"traceparent": f"00-{TRACE_ID}-{CLIENT_SPAN}-01"}
    async with connected(traced_stack.endpoint("edge-traced"), created["token"], MODERN) as client:
        result = await client.call_tool(ECHO_TOOL, {"value": "traced"}, meta=meta)
    assert not result.is_error, result

    def by(service: str) -> list[ReceivedSpan]:
        return [s for s in receiver.trace(TRACE_ID) if s.service == service]

    async def both() -> tuple[ReceivedSpan, ReceivedSpan] | None:
        edge = [s for s in by("aurora-mcp-edge") if s.parent_id == CLIENT_SPAN]
        gateway = [s for s in by("aurora-mcp-gateway") if s.name.startswith("tools/call")]
        return (edge[0], gateway[0]) if edge and gateway else None

    edge, gateway = await poll(both, what="the edge's and the gateway's spans in the client's trace")
    assert gateway.parent_id == edge.span_id, (edge, gateway, receiver.trace(TRACE_ID))

