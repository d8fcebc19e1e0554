"""An agent's tools as the gateway offers them (`amp.admin.agents.tools`), LLM-ready."""

from __future__ import annotations

import asyncio
from typing import Any

from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from services.runner.drivers.llm import Toolset
from services.runner.errors import AwaitRetry, StepFailed
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request

TOOLS_STEP = "tools"  # what a run waiting for the agent's tool list says it waits on


class GatewayTools:
    def __init__(self, nc: NATS, subjects: Subjects) -> None:
        self._nc = nc
        self._subjects = subjects

    async def toolset(self, agent_id: str, delivery: dict[str, Any]) -> Toolset:
        """Asked at the start of every attempt, so a tool withdrawn since is not offered."""
        for attempt in range(3):
            try:
                reply = await admin_request(self._nc, self._subjects, "agents", "tools",
                                            {"agent": agent_id, "delivery": delivery})
            except AdminRequestError as exc:
                # The gateway's copy of the agents may lag a moment behind a fresh `apply`.
                if exc.code == "unknown_agent" and attempt < 2:
                    await asyncio.sleep(0.5)
                    continue
                raise StepFailed("tools_unavailable", f"the gateway refused agent {agent_id}'s tools: {exc}") from exc
            except (NoRespondersError, NatsTimeoutError, TimeoutError) as exc:
                if attempt < 2:
                    await asyncio.sleep(0.5)
                    continue
                # Listing tools changes nothing: the run waits for the gateway (durably) and asks again.
                code = "no_gateway" if isinstance(exc, NoRespondersError) else "gateway_timeout"
                raise AwaitRetry(TOOLS_STEP, code, f"no gateway answered for agent {agent_id}'s tools") from exc
            return Toolset(
                descriptors=list(reply.get("tools") or []),
                names=dict(reply.get("names") or {}),
                side_effects={a["name"]: a.get("side_effect", "write") for a in reply.get("available") or []},
            )
        raise AssertionError("unreachable")
