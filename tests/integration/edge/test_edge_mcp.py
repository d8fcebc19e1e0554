"""An agent's MCP endpoint with the official SDK client, in both protocol eras."""

from __future__ import annotations

import pytest
from nats.aio.client import Client as NATS

from tests.integration.edge.conftest import EdgeStack
from tests.integration.edge.helpers import (
    COUNTER_GET, COUNTER_INC, ECHO_TOOL, LEGACY, MODERN, agent, connected, token,
)


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_lists_the_available_set_and_calls_through_the_gateway(
        edge_stack: EdgeStack, enc: NATS, mode: str) -> None:
    agent_id = f"edge-list-{mode.replace('-', '')}"
    await agent(enc, agent_id, [ECHO_TOOL, COUNTER_GET, "test.echo.no_such_tool"])
    created = await token(enc, agent_id, name="claude")
    async with connected(edge_stack.endpoint(agent_id), created["token"], mode) as client:
        listed = await client.list_tools()
        assert sorted(t.name for t in listed.tools) == [COUNTER_GET, ECHO_TOOL]
        result = await client.call_tool(ECHO_TOOL, {"value": {"n": 1, "ok": True, "list": [1, "2"]}})
        assert not result.is_error, result
        assert result.structured_content == {"value": {"n": 1, "ok": True, "list": [1, "2"]}}
        # a bound tool the agent does not have is refused by the gateway, as a tool error
        refused = await client.call_tool(COUNTER_INC, {"key": "x"})
        assert refused.is_error and "not_bound" in refused.content[0].text  # type: ignore[union-attr]
