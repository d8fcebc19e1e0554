"""What the A2A pool tests and their fixtures share: the remote agents' addresses and the token
the polled one wants."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TOKEN_ENV, TOKEN = "PARTS_AGENT_TOKEN", "parts-secret-7f3a"


@dataclass(frozen=True)
class RemoteAgents:
    polled: str  # the polled agent's base URL (its card at /.well-known/agent-card.json)
    streaming: str
    rest: str  # an agent of the HTTP+JSON binding only, polled
    folder: Path  # where they log every message and cancel (tests/harness/a2a_agents.py: agent_log)
