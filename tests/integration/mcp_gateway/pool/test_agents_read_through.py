"""`agents.tools` for an agent applied a moment ago: mcp-edge asks it when a token is created right
after `aurora apply`, before the gateway's mirror of the agents bucket may have seen the agent.
The gateway reads such an agent from the bucket instead of calling it unknown."""

from __future__ import annotations

from nats.aio.client import Client as NATS

from services.mcp_gateway.admin.agents import agent_endpoints
from services.mcp_gateway.pool.executable import Executability
from services.mcp_gateway.pool.live_catalog import ToolCatalog
from services.mcp_gateway.pool.registry import ToolPool
from shared.config.appconfig import AppsConfig
from shared.contracts.agent import Agent
from shared.contracts.resource import canonical_json
from shared.contracts.subjects import Subjects


async def test_an_agent_the_mirror_has_not_seen_yet_is_read_from_the_bucket(nc: NATS, subjects: Subjects) -> None:
    pool = ToolPool(nc.jetstream(), subjects)
    await pool.start()
    # Its agents mirror hears nothing more: an agent written now is one it has not seen.
    await pool.require_started().agents.stop()
    await pool.bucket("agents").put("late", canonical_json(Agent(id="late", agent_kind="llm", tools=())))
    assert "late" not in pool.agents

    tools = agent_endpoints(pool, Executability(lambda: pool.systems, {}, ToolCatalog()), AppsConfig())[
        ("agents", "tools")]
    view = await tools({"agent": "late"})
    assert view["available"] == []  # an agent with no tools bound, known: not "unknown_agent"
