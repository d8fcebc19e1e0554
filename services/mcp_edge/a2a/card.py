"""An agent's A2A Agent Card (pure): who it is, what it can do, where and how to call it.

The skills are the agent's tools (as `agents.tools` lists them for the edge: what the agent may
call now) and its `kind: Skill` documents; the interfaces are the JSON-RPC and HTTP+JSON bindings
under `/agents/<id>/a2a`; the one security scheme is the edge's bearer token (`aurora tokens
create --agent <id>`), the same one `/agents/<id>/mcp` takes. The card is served to anyone (A2A
discovery reads it before it has a credential), so it says nothing the token would not show:
the tools' names and descriptions, never their arguments' schemas.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol

from services.mcp_edge.gate import EdgeTool

BEARER = "aurora_token"
JSONRPC_PATH = "/a2a"
HTTP_JSON_PATH = "/a2a/rest"
CARD_PATHS = ("/.well-known/agent-card.json", "/a2a/.well-known/agent-card.json")
DESCRIPTION_LIMIT = 2000


def agent_url(base: str, agent: str) -> str:
    return f"{base}/agents/{agent}"


def tool_skill(tool: EdgeTool) -> AgentSkill:
    app = tool.name.rsplit(".", 1)[0] if "." in tool.name else tool.name
    return AgentSkill(id=tool.name, name=tool.name, description=tool.description[:DESCRIPTION_LIMIT] or tool.name,
                      tags=["tool", tool.side_effect, app])


def skill_skill(skill_id: str) -> AgentSkill:
    return AgentSkill(id=f"skill:{skill_id}", name=skill_id, tags=["skill"],
                      description=f"the agent's skill {skill_id!r} (an Aurora Skill document)")


def agent_card(base: str, agent: str, document: dict[str, Any] | None, tools: Iterable[EdgeTool], *,
               version: str) -> AgentCard:
    """`document`: the agent's stored definition (None when it could not be read: the card
    then names the tools alone)."""
    document = document or {}
    url = agent_url(base, agent)
    description = str(document.get("description") or f"Aurora agent {agent} ({document.get('agent_kind', 'agent')})")
    skills = [tool_skill(tool) for tool in tools]
    skills += [skill_skill(str(ref)) for ref in document.get("skills") or ()]
    scheme = SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(
        scheme="Bearer", bearer_format="aet_<id>_<secret>",
        description=f"an mcp-edge token for this agent: aurora tokens create --agent {agent}"))
    return AgentCard(
        name=agent,
        description=description[:DESCRIPTION_LIMIT],
        version=version,
        provider=AgentProvider(organization="Aurora", url=base),
        supported_interfaces=[
            AgentInterface(url=url + JSONRPC_PATH, protocol_binding=TransportProtocol.JSONRPC.value,
                           protocol_version=PROTOCOL_VERSION_1_0),
            AgentInterface(url=url + HTTP_JSON_PATH, protocol_binding=TransportProtocol.HTTP_JSON.value,
                           protocol_version=PROTOCOL_VERSION_1_0),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False, extended_agent_card=False),
        security_schemes={BEARER: scheme},
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList()})],
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=skills,
    )
