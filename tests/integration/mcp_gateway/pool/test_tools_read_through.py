"""A tool published a moment ago is read from the bucket when the gateway's mirror has not seen
it yet; a name no pool tool can have (a platform tool's, such as `event_reply`) costs no read."""

from __future__ import annotations

from nats.aio.client import Client as NATS

from services.mcp_gateway.pool.registry import ToolPool
from shared.contracts.resource import canonical_json
from shared.contracts.subjects import Subjects
from shared.contracts.tooldef import McpExecution, ToolDefinition


async def _api_requests(nc: NATS) -> int:
    """JetStream API requests the account has made so far (nats-server's own count)."""
    info = await nc.jetstream().account_info()
    return int(info.api.total)


async def test_only_a_name_a_pool_tool_can_have_is_read_from_the_bucket(nc: NATS, subjects: Subjects) -> None:
    pool = ToolPool(nc.jetstream(), subjects)
    await pool.start()
    # Its tools mirror hears nothing more: a tool written now is one it has not seen.
    await pool.require_started().tools.stop()
    late = ToolDefinition(name="late.echo", system="late", side_effect="read",
                          execution=McpExecution(app="late", tool="echo"))
    await pool.bucket("tools").put(late.name, canonical_json(late))

    before = await _api_requests(nc)
    for name in ("event_reply", "platform_send_message", "no dot", ""):
        assert await pool.tool(name) is None
    after_platform_names = await _api_requests(nc)
    found = await pool.tool("late.echo")
    after_read = await _api_requests(nc)

    assert found is not None and found.name == "late.echo"
    assert after_read > after_platform_names  # the read of late.echo is counted: the count sees reads
    assert after_platform_names == before + 1  # the count's own request, and no read for the four names
